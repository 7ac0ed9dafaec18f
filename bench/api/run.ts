// Benchmark (not a test): API latency of the embedded default and the scaled-out deployment, in the same run as a
// baseline: a bare Fastify process answering a fixed job body (baseline-server.ts), the floor of this machine's
// loopback, Node and load generator. autocannon holds 1,000 requests/s for 30 s against GET /jobs/{id} (training)
// and GET /datasets (preprocessing) of each; prints p50/p99 and errors, and each p99 over the baseline's. Then a 500 MB CSV
// uploaded through POST /datasets/upload into each blob store (folder, SeaweedFS): the preprocessing process's
// peak RSS growth (target < 50 MB scaled out: the upload streams into S3 multipart parts).
//   pnpm exec tsx bench/api/run.ts [--seconds 30] [--rate 1000] [--upload-mb 500]
import { createWriteStream, openAsBlob } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { freePorts, startPostgres, startRedis, startSeaweedFs, type RunningServer } from '../../test/servers/servers.ts';
import { scaledOutEnv } from '../../test/servers/scaled-env.ts';
import { stackPorts, startNode, waitHealthy, type NodeProcess, type StackUrls } from '../../test/support/stack.ts';
import { tinyModelsDir, TINY_MODEL } from '../../test/support/tiny-model.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const args = process.argv.slice(2);
const arg = (name: string, fallback: number) => Number(args[args.indexOf(`--${name}`) + 1] ?? NaN) || fallback;
const SECONDS = arg('seconds', 30);
const RATE = arg('rate', 1000);
const UPLOAD_MB = arg('upload-mb', 500);

interface Deployment {
  name: string;
  urls: StackUrls;
  processes: NodeProcess[];
  /** The process that serves preprocessing (whose memory the upload measures). */
  preprocessing: NodeProcess;
}

async function until(ready: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400 && !(await ready()); i++) await new Promise((r) => setTimeout(r, 50));
}

const kb = (pid: number, field: 'VmRSS' | 'VmHWM') => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(execFileSync('cat', [`/proc/${pid}/status`]).toString())![1]);

async function json(url: string, init: RequestInit = {}): Promise<any> {
  const res = await fetch(url, init);
  const body = await res.json();
  if (!res.ok) throw new Error(`${url} → ${res.status}: ${JSON.stringify(body)}`);
  return body;
}

/** One processed dataset and one (queued) training job to read back. */
async function seed(urls: StackUrls): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([['question,answer', ...Array.from({ length: 20 }, (_, i) => `q${i},a${i}`)].join('\n')]), 'qa.csv');
  const upload = await json(`${urls.preprocessing}/datasets/upload`, { method: 'POST', body: form });
  const headers = { 'content-type': 'application/json' };
  const fields = { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } };
  const processed = await json(`${urls.preprocessing}/datasets/process`, { method: 'POST', headers, body: JSON.stringify({ dataset_name: 'bench', dataset_id: upload.dataset_id, config: { field_mappings: fields } }) });
  const config = { base_model_id: TINY_MODEL, provider: 'local', method: 'LoRA', hyperparameters: { max_steps: 1 } };
  return (await json(`${urls.training}/train`, { method: 'POST', headers, body: JSON.stringify({ processed_dataset_id: processed.processed_dataset_id, training_config: config }) })).job_id;
}

async function load(url: string): Promise<{ p50: number; p99: number; errors: number; requests: number }> {
  const result = await autocannon({ url, connections: 50, overallRate: RATE, duration: SECONDS });
  return { p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.timeouts + result.non2xx, requests: result.requests.total };
}

async function writeCsv(file: string, megabytes: number): Promise<number> {
  const out = createWriteStream(file);
  const row = (i: number) => `"question number ${i} about billing and refunds?","answer ${i}: open the account page, choose refund, and confirm."\n`;
  out.write('question,answer\n');
  for (let i = 0, written = 0; written < megabytes * 1024 * 1024; i++) {
    const line = row(i);
    written += line.length;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return (await fs.stat(file)).size;
}

/** Uploads `file` and returns the preprocessing process's peak RSS growth over its idle RSS, in MB. */
async function uploadGrowth(deployment: Deployment, file: string): Promise<{ growthMb: number; seconds: number }> {
  const pid = deployment.preprocessing.child.pid!;
  const idle = kb(pid, 'VmRSS');
  const form = new FormData();
  form.append('file', await openAsBlob(file), 'big.csv');
  const started = performance.now();
  const upload = await json(`${deployment.urls.preprocessing}/datasets/upload`, { method: 'POST', body: form });
  if (!upload.num_examples) throw new Error('the upload counted no rows');
  return { growthMb: (kb(pid, 'VmHWM') - idle) / 1024, seconds: (performance.now() - started) / 1000 };
}

async function main(): Promise<void> {
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-bench-api-'));
  const servers: RunningServer[] = [];
  const processes: NodeProcess[] = [];
  try {
    const [postgres, redis, s3] = await Promise.all([startPostgres(), startRedis(), startSeaweedFs()]);
    servers.push(postgres, redis, s3);
    const modelsDir = await tinyModelsDir();
    const quiet = { LOG_LEVEL: 'warn', MAX_UPLOAD_BYTES: String(2 * 1024 ** 3) };

    // The embedded default: one process, no worker (jobs stay queued; the bench reads them).
    const embeddedPorts = await stackPorts();
    const stack = startNode('services/stack/src/main.ts', { ...quiet, ...embeddedPorts.env, DATA_DIR: path.join(scratch, 'embedded'), MODELS_DIR: modelsDir, START_WORKER: 'false' });
    processes.push(stack);
    await waitHealthy(Object.values(embeddedPorts.urls), [stack]);
    const embedded: Deployment = { name: 'embedded', urls: embeddedPorts.urls, processes: [stack], preprocessing: stack };

    // Scaled out: the four services as processes on PostgreSQL, Redis and SeaweedFS; the model in the store.
    const scaledPorts = await stackPorts();
    const env = { ...quiet, ...(await scaledOutEnv({ postgresUrl: postgres.url, redisUrl: redis.url, s3: { endpoint: s3.url, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } }, 'bench')), ...scaledPorts.env };
    execFileSync(process.execPath, ['--import', 'tsx', 'services/stack/src/models.ts', 'add', path.join(modelsDir, TINY_MODEL), TINY_MODEL], { cwd: ROOT, env: { ...process.env, ...env, DATA_DIR: path.join(scratch, 'cli') } });
    const services = Object.keys(scaledPorts.urls).map((s) => startNode(`services/${s}/src/server.ts`, { ...env, DATA_DIR: path.join(scratch, s) }));
    processes.push(...services);
    await waitHealthy(Object.values(scaledPorts.urls), services);
    const scaled: Deployment = { name: 'scaled-out', urls: scaledPorts.urls, processes: services, preprocessing: services[0]! };

    console.log(`bench/api: ${RATE} requests/s for ${SECONDS} s each, 50 connections, loopback, ${os.cpus().length} CPU cores (client and servers share them)`);
    const [basePort] = await freePorts(1);
    const baseline = startNode('bench/api/baseline-server.ts', { PORT: String(basePort) });
    processes.push(baseline);
    await until(() => fetch(`http://127.0.0.1:${basePort}/jobs/x`).then((r) => r.ok, () => false));
    const floor = await load(`http://127.0.0.1:${basePort}/jobs/x`);
    console.log(`  ${'baseline'.padEnd(10)} ${'bare Fastify'.padEnd(15)} p50 ${floor.p50} ms  p99 ${floor.p99} ms  errors ${floor.errors} of ${floor.requests}`);
    const results: Record<string, Record<string, Awaited<ReturnType<typeof load>>>> = {};
    for (const deployment of [embedded, scaled]) {
      const jobId = await seed(deployment.urls);
      results[deployment.name] = {
        'GET /jobs/{id}': await load(`${deployment.urls.training}/jobs/${jobId}`),
        'GET /datasets': await load(`${deployment.urls.preprocessing}/datasets`),
      };
      for (const [endpoint, r] of Object.entries(results[deployment.name]!)) {
        const ratio = (r.p99 / Math.max(floor.p99, 1e-9)).toFixed(2);
        console.log(`  ${deployment.name.padEnd(10)} ${endpoint.padEnd(15)} p50 ${r.p50} ms  p99 ${r.p99} ms  errors ${r.errors} of ${r.requests}  p99/baseline ${ratio}× (target p99 < 10 ms, 0 errors)`);
      }
    }

    const file = path.join(scratch, 'big.csv');
    const bytes = await writeCsv(file, UPLOAD_MB);
    console.log(`upload of ${(bytes / 1024 ** 2).toFixed(0)} MB through POST /datasets/upload:`);
    for (const deployment of [embedded, scaled]) {
      const { growthMb, seconds } = await uploadGrowth(deployment, file);
      console.log(`  ${deployment.name.padEnd(10)} preprocessing peak RSS growth ${growthMb.toFixed(1)} MB, ${seconds.toFixed(1)} s (${(bytes / 1024 ** 2 / seconds).toFixed(0)} MB/s)${deployment === scaled ? ' (target < 50 MB)' : ''}`);
    }
  } finally {
    await Promise.all(processes.map((p) => p.stop('SIGTERM')));
    await Promise.all(servers.map((s) => s.stop()));
    await fs.rm(scratch, { recursive: true, force: true });
  }
}

await main();
