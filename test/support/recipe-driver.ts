// Run by test/scaling-out-readme.test.ts inside the namespaces where README.md's "Without Docker, on one Debian
// machine" runs as written (not a test on its own): what an operator does next on the deployment the section started,
// on its fixed ports. The first API key from training.log (where the README says it is printed), every service and
// the console healthy, two live workers, then a job trained and its adapter exported and downloaded through them. The
// last line printed is `@@recipe <json>@@` with what it saw; a failure is `@@recipe-failed <message>@@` and exit 1.
import fs from 'node:fs/promises';

const PORTS = { openai: 8000, preprocessing: 8001, training: 8002, export: 8003, inference: 8004, console: 8080 } as const;
const url = (service: keyof typeof PORTS, path: string) => `http://127.0.0.1:${PORTS[service]}${path}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, seconds: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${seconds} s${last ? ` (${(last as Error).message})` : ''}`);
    await sleep(1000);
  }
}

async function main(): Promise<void> {
  // "AUTH_MODE=token and no API key existed; created one for user "local" (shown once):" and the key on the next line.
  const key = await until('the first API key in training.log', 120, async () => /\(shown once\):\n\s+(\S+)/.exec(await fs.readFile('training.log', 'utf8'))?.[1]);
  const headers = { authorization: `Bearer ${key}` };
  const call = async (service: keyof typeof PORTS, path: string, init: RequestInit = {}): Promise<any> => {
    const res = await fetch(url(service, path), { ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } });
    const body = await res.text();
    if (!res.ok) throw new Error(`${init.method ?? 'GET'} :${PORTS[service]}${path}: ${res.status} ${body}`);
    return JSON.parse(body);
  };
  const post = (service: keyof typeof PORTS, path: string, json: unknown) =>
    call(service, path, { method: 'POST', body: JSON.stringify(json), headers: { 'content-type': 'application/json' } });

  for (const service of Object.keys(PORTS) as Array<keyof typeof PORTS>) {
    await until(`${service} healthy on :${PORTS[service]}`, 180, async () => ((await fetch(url(service, '/health'))).ok ? true : undefined));
  }
  const workers = await until('two live workers', 180, async () => {
    const live = (await call('training', '/workers')).workers as Array<{ worker_id: string; queues: string[] }>;
    return live.length >= 2 ? live : undefined;
  });

  const form = new FormData();
  form.append('file', new Blob(['question,answer\n', ...Array.from({ length: 12 }, (_, i) => `What is ${i} plus one?,${i + 1}.\n`)]), 'qa.csv');
  const upload = await call('preprocessing', '/datasets/upload', { method: 'POST', body: form });
  const processed = await post('preprocessing', '/datasets/process', {
    dataset_name: 'recipe', dataset_id: upload.dataset_id,
    config: {
      field_mappings: { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } },
      split_config: { type: 'manual_split', test_size: 0.25 },
    },
  });
  const { job_id: jobId } = await post('training', '/train', {
    processed_dataset_id: processed.processed_dataset_id, job_name: 'recipe',
    training_config: {
      base_model_id: process.env.RECIPE_MODEL_ID, provider: 'local', method: 'LoRA',
      hyperparameters: { max_steps: 4, logging_steps: 1, batch_size: 4, gradient_accumulation_steps: 1, max_length: 64, learning_rate: 0.01 },
    },
  });
  const job = await until(`job ${jobId} ended`, 300, async () => {
    const row = await call('training', `/jobs/${jobId}`);
    return ['completed', 'failed', 'cancelled'].includes(row.status) ? row : undefined;
  });
  if (job.status !== 'completed') throw new Error(`job ${jobId} ${job.status}: ${job.error}`);

  await post('export', '/exports', { job_id: jobId, export_type: 'adapter' });
  const exported = await until(`the adapter export of ${jobId} ended`, 180, async () => {
    const latest = (await call('export', `/exports/${jobId}`)).latest_export;
    return latest && latest.status !== 'running' && latest.status !== 'queued' ? latest : undefined;
  });
  if (exported.status !== 'completed') throw new Error(`export ${exported.status}: ${exported.message}`);
  const download = await fetch(url('export', `/exports/${jobId}/download?type=adapter`), { headers });
  const bytes = download.ok ? (await download.arrayBuffer()).byteLength : 0;
  if (!download.ok) throw new Error(`download: ${download.status} ${await download.text()}`);
  const consoleAnswer = await fetch(url('console', '/'));

  const seen = {
    workers: workers.length,
    job: job.status,
    export: exported.status,
    adapter_bytes: bytes,
    adapter_length: Number(download.headers.get('content-length')),
    console: consoleAnswer.status,
  };
  process.stdout.write(`\n@@recipe ${JSON.stringify(seen)}@@\n`);
}

main().catch((err: unknown) => {
  process.stdout.write(`\n@@recipe-failed ${(err as Error).message.replace(/\n/g, ' ')}@@\n`);
  process.exit(1);
});
