// The soak (#56), a tool, not a test: the scaled-out deployment (PostgreSQL, Redis, SeaweedFS; the five services and
// the console as processes; two workers, each its own DATA_DIR and model cache; token mode), N tiny LoRA jobs with
// exports of their models, and random faults of every kind a deployment meets: worker SIGKILLs, SIGKILLs of a worker's
// children (training cores, GGUF conversions, the fast engine), service SIGKILLs (the training and export services
// among them), PostgreSQL and Redis restarts, SeaweedFS stopped for a while. Killed processes come back as a supervisor
// (systemd's Restart=) brings them back. It runs in network, mount and process namespaces of its own (as
// test/scaling-out-readme.test.ts runs the README's recipe), so its ports and kills touch nothing outside.
// When the faults stop it waits for the work to drain, then prints its fault log and a table: submitted, completed,
// failed (by reason), stuck, lost, trained twice, bad exports, 5xx answers. Exit status 1 when any of the last five
// is not 0.
//   node --import tsx bench/soak/run.ts [--jobs 100] [--minutes 40] [--fault-every 40] [--seed 1]   (root, Debian)
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiKeysRepository, loadConfig, openPostgresDatabase } from '@ftp/platform';
import { seededRandom } from '../../packages/datasets/src/processing/splits.ts';
import { startPostgres, startRedis, startSeaweedFs, type RunningServer } from '../../test/servers/servers.ts';
import { scaledOutEnv } from '../../test/servers/scaled-env.ts';
import { jobHistory, historyMessages } from '../../test/support/job-events.ts';
import { stackPorts, startNode, waitHealthy, type NodeProcess } from '../../test/support/stack.ts';
import { tinyModelsDir, TINY_MODEL } from '../../test/support/tiny-model.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const args = process.argv.slice(2);
const arg = (name: string, fallback: number) => Number(args[args.indexOf(`--${name}`) + 1] ?? NaN) || fallback;
const JOBS = arg('jobs', 100);
const MINUTES = arg('minutes', 40);
const FAULT_EVERY_S = arg('fault-every', 40);
const SEED = arg('seed', 1);
const DRAIN_S = 900;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The same faults and jobs for the same seed. */
const random = seededRandom(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

/** A process a supervisor keeps running: started again a second after it exits, for whatever reason. */
class Supervised {
  process!: NodeProcess;
  restarts = 0;
  private stopping = false;

  constructor(
    readonly name: string,
    private readonly script: string,
    private readonly env: Record<string, string>,
  ) {
    this.start();
  }

  private start(): void {
    this.process = startNode(this.script, this.env);
    this.process.child.once('exit', () => {
      if (this.stopping) return;
      this.restarts += 1;
      setTimeout(() => this.start(), 1000);
    });
  }

  get pid(): number {
    return this.process.child.pid!;
  }

  async kill(): Promise<void> {
    await this.process.stop('SIGKILL');
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.process.stop('SIGTERM');
  }
}

interface Fault {
  at: number;
  kind: string;
  target: string;
}

/** Every descendant of `pid` with its command line. */
function descendants(pid: number): Array<{ pid: number; args: string }> {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,args=']).toString().trim().split('\n').map((line) => {
    const [p, pp, ...rest] = line.trim().split(/\s+/);
    return { pid: Number(p), ppid: Number(pp), args: rest.join(' ') };
  });
  const found: Array<{ pid: number; args: string }> = [];
  const walk = (parent: number) => {
    for (const row of rows.filter((r) => r.ppid === parent)) {
      found.push({ pid: row.pid, args: row.args });
      walk(row.pid);
    }
  };
  walk(pid);
  return found;
}

async function inside(): Promise<number> {
  execFileSync('ip', ['link', 'set', 'lo', 'up']);
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-soak-'));
  const started = Date.now();
  const since = () => Math.round((Date.now() - started) / 1000);
  const log = (line: string) => console.log(`[soak ${String(since()).padStart(5)} s] ${line}`);
  const [postgres, redis, s3] = (await Promise.all([startPostgres(), startRedis(), startSeaweedFs()])) as [RunningServer, RunningServer, Awaited<ReturnType<typeof startSeaweedFs>>];
  const ports = await stackPorts();
  const urls = ports.urls;
  const env: Record<string, string> = {
    ...(await scaledOutEnv({ postgresUrl: postgres.url, redisUrl: redis.url, s3: { endpoint: s3.url, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } }, 'soak')),
    ...ports.env,
    AUTH_MODE: 'token',
    LOG_LEVEL: 'warn',
    FAST_ENGINE_THREADS: '1',
  };
  const db = await openPostgresDatabase(loadConfig({ ...env, DATA_DIR: path.join(scratch, 'cli') }).DATABASE_URL!);
  const headers = { authorization: `Bearer ${(await new ApiKeysRepository(db).create('soak', 'soak')).key}` };
  await db.close();
  execFileSync(process.execPath, ['--import', 'tsx', 'services/stack/src/models.ts', 'add', path.join(await tinyModelsDir(), TINY_MODEL), TINY_MODEL], {
    cwd: ROOT, env: { ...process.env, ...env, DATA_DIR: path.join(scratch, 'cli') },
  });
  const services = ['preprocessing', 'training', 'export', 'inference', 'openai', 'console'].map((s) => new Supervised(s, `services/${s}/src/server.ts`, { ...env, DATA_DIR: path.join(scratch, s) }));
  await waitHealthy(Object.values(urls), services.map((s) => s.process));
  const workers = ['a', 'b'].map((w) => new Supervised(`worker ${w}`, 'services/worker/src/main.ts', { ...env, DATA_DIR: path.join(scratch, `worker-${w}`), MODELS_DIR: path.join(scratch, `worker-${w}-models`), WORKER_METRICS_PORT: '0' }));

  // Every answer the soak gets is counted; a 5xx is kept with what asked. Refused connections (a killed service on
  // its way back) are not answers.
  const fiveXx: string[] = [];
  const call = async (url: string, init: RequestInit & { json?: unknown } = {}): Promise<{ status: number; body: any } | undefined> => {
    const { json, ...rest } = init;
    try {
      const res = await fetch(url, { ...rest, headers: { ...headers, ...(json === undefined ? {} : { 'content-type': 'application/json' }) }, ...(json === undefined ? {} : { body: JSON.stringify(json) }) });
      const text = await res.text();
      if (res.status >= 500 && res.status !== 503) fiveXx.push(`${init.method ?? 'GET'} ${new URL(url).pathname} → ${res.status}: ${text.slice(0, 200)}`);
      return { status: res.status, body: text.startsWith('{') ? JSON.parse(text) : text };
    } catch {
      return undefined;
    }
  };

  const form = new FormData();
  form.append('file', new Blob([['question,answer', ...Array.from({ length: 24 }, (_, i) => `"q${i % 6}?","a${i % 6}."`)].join('\n')]), 'qa.csv');
  const upload = (await (await fetch(`${urls.preprocessing}/datasets/upload`, { method: 'POST', body: form, headers })).json()) as { dataset_id: string };
  const processed = await call(`${urls.preprocessing}/datasets/process`, {
    method: 'POST',
    json: { dataset_name: 'soak', dataset_id: upload.dataset_id, config: { field_mappings: { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } }, split_config: { type: 'manual_split', test_size: 4 } } },
  });
  const datasetId: string = processed!.body.processed_dataset_id;
  log(`up: 3 servers, ${services.length} services, ${workers.length} workers; ${JOBS} jobs over ${MINUTES} min, a fault every ~${FAULT_EVERY_S} s, seed ${SEED}`);

  const submitted: string[] = [];
  /** Completed jobs seen, with the export asked of each (null: none). */
  const exportsAsked = new Map<string, 'adapter' | 'gguf' | null>();
  const faults: Fault[] = [];
  const deadline = started + MINUTES * 60_000;

  const submitting = (async () => {
    for (let n = 0; n < JOBS && Date.now() < deadline; n++) {
      // As a client does: a 503 (an outage the service names) or no answer (a service on its way back) is tried again.
      let res: Awaited<ReturnType<typeof call>>;
      for (let attempt = 1; ; attempt++) {
        res = await submitJob(n);
        if ((res === undefined || res.status === 503) && attempt < 24) await sleep(5000);
        else break;
      }
      if (res?.status === 200) submitted.push(res.body.job_id);
      else log(`submit ${n}: ${res ? `${res.status} ${JSON.stringify(res.body).slice(0, 200)}` : 'no answer'}`);
      await sleep(((MINUTES * 60_000) / JOBS) * 0.7 * (0.5 + random()));
    }
  })();

  function submitJob(n: number) {
    return call(`${urls.training}/train`, {
      method: 'POST',
      json: {
        processed_dataset_id: datasetId,
        job_name: `soak ${n}`,
        training_config: {
          base_model_id: TINY_MODEL, provider: 'local', method: 'LoRA', resume_on_restart: random() < 0.7,
          hyperparameters: { max_steps: 20 + Math.floor(random() * 40), logging_steps: 1, learning_rate: 0.01, batch_size: 4, gradient_accumulation_steps: 1, max_length: 32, save_strategy: 'steps', save_steps: 5 },
        },
      },
    });
  }

  // Exports of completed jobs: a third adapters, a third GGUF.
  const exporting = (async () => {
    while (Date.now() < deadline) {
      await sleep(10_000);
      const list = await call(`${urls.training}/jobs`);
      for (const job of (list?.body?.jobs ?? []) as Array<{ job_id: string; status: string }>) {
        if (job.status !== 'completed' || exportsAsked.has(job.job_id)) continue;
        const roll = random();
        const type = roll < 1 / 3 ? 'adapter' : roll < 2 / 3 ? 'gguf' : undefined;
        exportsAsked.set(job.job_id, type ?? null);
        if (!type) continue;
        const res = await call(`${urls.export}/exports`, { method: 'POST', json: { job_id: job.job_id, export_type: type } });
        if (res?.status !== 200) exportsAsked.delete(job.job_id);
      }
    }
  })();

  const kinds = ['worker', 'worker-child', 'service', 'postgres', 'redis', 's3'] as const;
  const faulting = (async () => {
    while (Date.now() < deadline) {
      await sleep(FAULT_EVERY_S * 1000 * (0.5 + random()));
      if (Date.now() >= deadline) break;
      const kind = pick(kinds);
      let target = '';
      if (kind === 'worker') {
        const worker = pick(workers);
        target = worker.name;
        await worker.kill();
      } else if (kind === 'worker-child') {
        const children = workers.flatMap((w) => descendants(w.pid).filter((c) => /ftcore (train|gguf|merge)|engine-process-main|llama/.test(c.args)).map((c) => ({ ...c, worker: w.name })));
        if (children.length === 0) continue;
        const child = pick(children);
        target = `${child.worker}: ${/ftcore \S+|engine-process-main|llama\S*/.exec(child.args)?.[0] ?? child.args.slice(0, 60)} (pid ${child.pid})`;
        try {
          process.kill(child.pid, 'SIGKILL');
        } catch {
          continue; // it ended meanwhile
        }
      } else if (kind === 'service') {
        const service = pick(services);
        target = service.name;
        await service.kill();
      } else {
        const server = kind === 'postgres' ? postgres : kind === 'redis' ? redis : s3;
        const seconds = kind === 's3' ? 5 + Math.floor(random() * 15) : 2;
        target = `down ${seconds} s`;
        await server.down(kind === 's3' ? undefined : 'SIGTERM');
        await sleep(seconds * 1000);
        await server.up();
      }
      faults.push({ at: since(), kind, target });
      log(`fault ${faults.length}: ${kind} ${target}`);
    }
  })();

  await Promise.all([submitting, exporting, faulting]);
  log(`faults stop: ${faults.length}; draining (up to ${DRAIN_S} s)`);
  const terminal = new Set(['completed', 'failed', 'cancelled']);
  let jobs: Array<{ job_id: string; status: string; error: string | null }> = [];
  for (const end = Date.now() + DRAIN_S * 1000; Date.now() < end; await sleep(5000)) {
    jobs = ((await call(`${urls.training}/jobs`))?.body?.jobs ?? jobs) as typeof jobs;
    const waitingExports = await Promise.all([...exportsAsked].filter(([, t]) => t).map(async ([id]) => (await call(`${urls.export}/exports/${id}`))?.body?.latest_export?.status));
    if (jobs.length >= submitted.length && jobs.every((j) => terminal.has(j.status)) && waitingExports.every((s) => s !== 'queued' && s !== 'running')) break;
  }

  // The table.
  const byId = new Map(jobs.map((j) => [j.job_id, j]));
  const lost = submitted.filter((id) => !byId.has(id));
  const stuck = jobs.filter((j) => !terminal.has(j.status)).map((j) => `${j.job_id} ${j.status}`);
  const failedReasons = new Map<string, number>();
  for (const j of jobs.filter((x) => x.status === 'failed')) {
    const reason = (j.error ?? '?').replace(/wrk_[0-9a-f]+/g, 'wrk_…').replace(/\d+/g, 'N');
    failedReasons.set(reason, (failedReasons.get(reason) ?? 0) + 1);
  }
  const trainedTwice: string[] = [];
  for (const j of jobs.filter((x) => x.status === 'completed')) {
    const history = await jobHistory(urls.training, j.job_id, headers);
    const savings = historyMessages(history).filter((m) => m === 'saving the trained model…').length;
    const finals = history.filter((e) => e.kind === 'metrics' && (e.data as { final?: boolean }).final).length;
    const past = history.some((e) => e.kind === 'progress' && (e.data as { step: number; total_steps: number }).step > (e.data as { total_steps: number }).total_steps);
    if (savings > 1 || finals > 1 || past) trainedTwice.push(`${j.job_id} (savings ${savings}, final metrics ${finals}${past ? ', a step past the total' : ''})`);
  }
  // An export that failed says why (a reason, as a failed job does); a bad one completed and is not what it says.
  const badExports: string[] = [];
  const failedExports = new Map<string, number>();
  let goodExports = 0;
  for (const [id, type] of exportsAsked) {
    if (!type) continue;
    const latest = (await call(`${urls.export}/exports/${id}`))?.body?.latest_export;
    if (!latest || latest.status !== 'completed') {
      if (latest) {
        const reason = `${type}: ${latest.status} ${String(latest.message ?? '').replace(/\d+/g, 'N')}`;
        failedExports.set(reason, (failedExports.get(reason) ?? 0) + 1);
      }
      continue;
    }
    const res = await fetch(`${urls.export}/exports/${id}/download?type=${type}`, { headers });
    const bytes = Buffer.from(await res.arrayBuffer());
    const file = path.join(scratch, `download-${id}`);
    await fs.writeFile(file, bytes);
    const intact = res.ok && bytes.length === Number(res.headers.get('content-length') ?? bytes.length) && (type === 'gguf' ? bytes.subarray(0, 4).toString() === 'GGUF' : listsAdapter(file));
    if (intact) goodExports += 1;
    else badExports.push(`${id} ${type}: ${res.status}, ${bytes.length} bytes, sha256 ${createHash('sha256').update(bytes).digest('hex').slice(0, 12)}`);
  }

  const count = (status: string) => jobs.filter((j) => j.status === status).length;
  const kindsCount = Object.fromEntries(kinds.map((k) => [k, faults.filter((f) => f.kind === k).length]));
  console.log('\n## Fault log\n');
  for (const f of faults) console.log(`- ${f.at} s: ${f.kind} ${f.target}`);
  console.log(`\nrestarts by the supervisor: ${[...services, ...workers].map((s) => `${s.name} ${s.restarts}`).join(', ')}`);
  console.log('\n## Table\n');
  console.log('| what | count |\n| --- | ---: |');
  console.log(`| minutes of faults (then drained) | ${MINUTES} |`);
  console.log(`| faults (${Object.entries(kindsCount).map(([k, v]) => `${k} ${v}`).join(', ')}) | ${faults.length} |`);
  console.log(`| submitted | ${submitted.length} |`);
  console.log(`| completed | ${count('completed')} |`);
  console.log(`| failed | ${count('failed')} |`);
  for (const [reason, n] of failedReasons) console.log(`| · failed: ${reason.replace(/\|/g, '/')} | ${n} |`);
  console.log(`| cancelled | ${count('cancelled')} |`);
  console.log(`| stuck | ${stuck.length} |`);
  console.log(`| lost | ${lost.length} |`);
  console.log(`| trained twice | ${trainedTwice.length} |`);
  console.log(`| exports completed, downloaded intact | ${goodExports} |`);
  console.log(`| exports failed | ${[...failedExports.values()].reduce((a, b) => a + b, 0)} |`);
  for (const [reason, n] of failedExports) console.log(`| · export ${reason.replace(/\|/g, '/')} | ${n} |`);
  console.log(`| bad exports (completed, not intact) | ${badExports.length} |`);
  console.log(`| 5xx answers (503 aside) | ${fiveXx.length} |`);
  for (const line of [...stuck, ...lost.map((id) => `lost ${id}`), ...trainedTwice, ...badExports, ...fiveXx.slice(0, 20)]) console.log(`  ${line}`);

  await Promise.all([...workers, ...services].map((s) => s.stop().catch(() => undefined)));
  await Promise.all([postgres, redis, s3].map((s) => s.stop().catch(() => undefined)));
  await fs.rm(scratch, { recursive: true, force: true });
  return stuck.length + lost.length + trainedTwice.length + badExports.length + fiveXx.length === 0 ? 0 : 1;
}

/** Whether a downloaded adapter archive (tar.gz) lists the adapter's weights. */
function listsAdapter(file: string): boolean {
  try {
    return /adapter_model\.safetensors/.test(execFileSync('tar', ['-tzf', file]).toString());
  } catch {
    return false;
  }
}

if (process.env.FTP_SOAK_INSIDE === '1') {
  process.exitCode = await inside();
  process.exit();
} else {
  // Namespaces of its own: network (its own loopback and ports), mount (its /tmp mounts), processes (its kills).
  const child = spawn('unshare', ['--net', '--mount', '--propagation', 'private', '--pid', '--fork', '--mount-proc', process.execPath, '--import', 'tsx', fileURLToPath(import.meta.url), ...args], {
    cwd: ROOT, env: { ...process.env, FTP_SOAK_INSIDE: '1' }, stdio: 'inherit',
  });
  child.on('exit', (code) => process.exit(code ?? 1));
}
