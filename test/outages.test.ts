// Servers that blink under a scaled-out stack: PostgreSQL, Redis and SeaweedFS of this file's own (stopping the
// shared ones would disturb the test files running beside it), the preprocessing, training and export services and
// two workers as processes. PostgreSQL is stopped while two jobs train and one is queued, then Redis in the same
// situation, then SeaweedFS while a job stores its adapter and while an export runs. Each time every job and export
// ends completed with no manual step, nothing stored before is gone (bucket keys, rows), no job's progress goes back
// without an event saying why, and the workers' logs show the writes that failed during the outage being retried:
// the outage hit what it meant to. Each outage lasts at least 10 s, and until such a retry was seen.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, openBlobStore, type BlobStore } from '@ftp/platform';
import { scaledOutEnv } from './servers/scaled-env.ts';
import { startPostgres, startRedis, startSeaweedFs, type RunningServer, type S3Server } from './servers/servers.ts';
import { historyMessages, jobHistory, type JobEvent } from './support/job-events.ts';
import { stackPorts, startNode, waitHealthy, type NodeProcess, type StackUrls } from './support/stack.ts';
import { tinyModelsDir, TINY_MODEL } from './support/tiny-model.ts';

const WORKER_TIMEOUT_S = 8;
const OUTAGE_MS = 10_000;

let scratch: string;
let urls: StackUrls;
let blobs: BlobStore;
let servers: { postgres: RunningServer; redis: RunningServer; s3: S3Server };
const services: NodeProcess[] = [];
const workers: NodeProcess[] = [];

/** GET or POST `url` and its JSON; null while the service answers an error (as during an outage). */
async function call(url: string, body?: unknown): Promise<Record<string, any> | null> {
  const res = await fetch(url, body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).catch(() => null);
  return res?.ok ? ((await res.json()) as Record<string, any>) : null;
}

/** Polls `read` until `done` holds; reads that fail count as not done. */
async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 240_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await read().catch(() => undefined);
    if (last !== undefined && done(last)) return last;
    if (Date.now() > deadline) throw new Error(`${what}: not there within ${timeoutMs} ms; last seen ${JSON.stringify(last)?.slice(0, 2000)}`);
    await sleep(250);
  }
}

const job = (id: string) => call(`${urls.training}/jobs/${id}`);
const workerLogs = () => workers.map((w) => w.output()).join('\n');
const logLines = (text: string, msg: string) => text.split('\n').filter((l) => l.includes(`"msg":"${msg}"`)).map((l) => JSON.parse(l) as Record<string, unknown>);

/** Keeps `server` down for at least OUTAGE_MS and until `hit` holds, then starts it again; returns how long it was down. */
async function outage(server: RunningServer, hit: () => boolean, signal?: NodeJS.Signals): Promise<number> {
  const from = Date.now();
  await server.down(signal);
  await until('the outage to reach the workers', async () => Date.now() - from >= OUTAGE_MS && hit(), Boolean, 180_000);
  await server.up();
  return Date.now() - from;
}

/** Whether a worker logged a storage call under `prefix` failing and being retried. */
const storing = (prefix: string) => (): boolean => logLines(workerLogs(), 'storage unreachable, retrying').some((l) => String(l.action).includes(prefix));

/** Every key in the bucket but stored checkpoints (which training rotates away by design). */
async function storedKeys(): Promise<string[]> {
  return (await blobs.list('')).map((b) => b.key).filter((k) => !k.includes('/checkpoints/'));
}

/** Progress steps never go down unless an event before says why (a re-queue or a resume). */
function expectProgressForward(log: readonly JobEvent[]): void {
  let step = -1;
  for (const event of log) {
    if (event.kind === 'log' && /re-queued|resumed from/.test(String(event.data.message))) step = -1;
    if (event.kind !== 'progress') continue;
    expect(event.data.step, JSON.stringify(log.slice(-20))).toBeGreaterThanOrEqual(step);
    step = event.data.step!;
  }
}

function trainRequest(datasetId: string, name: string, maxSteps: number, extra: Record<string, unknown> = {}) {
  return {
    processed_dataset_id: datasetId,
    job_name: name,
    training_config: {
      base_model_id: TINY_MODEL, provider: 'local', method: 'LoRA', trainer_type: 'sft',
      hyperparameters: { logging_steps: 1, learning_rate: 0.01, batch_size: 4, gradient_accumulation_steps: 1, max_length: 32, max_steps: maxSteps, save_strategy: 'no', ...extra },
    },
  };
}

beforeAll(async () => {
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-outages-'));
  const [postgres, redis, s3] = await Promise.all([startPostgres(), startRedis(), startSeaweedFs()]);
  servers = { postgres, redis, s3 };
  const ports = await stackPorts();
  urls = ports.urls;
  const env = {
    ...(await scaledOutEnv({ postgresUrl: postgres.url, redisUrl: redis.url, s3: { endpoint: s3.url, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } }, 'outages')),
    ...ports.env,
    WORKER_TIMEOUT_S: String(WORKER_TIMEOUT_S),
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
  };
  blobs = await openBlobStore(loadConfig({ ...env, DATA_DIR: path.join(scratch, 'test') }));
  execFileSync(process.execPath, ['--import', 'tsx', 'services/stack/src/models.ts', 'add', path.join(await tinyModelsDir(), TINY_MODEL), TINY_MODEL], {
    cwd: fileURLToPath(new URL('../', import.meta.url)),
    env: { ...process.env, ...env, DATA_DIR: path.join(scratch, 'cli') },
  });
  for (const service of ['preprocessing', 'training', 'export'] as const) services.push(startNode(`services/${service}/src/server.ts`, { ...env, DATA_DIR: path.join(scratch, service) }));
  for (const name of ['a', 'b']) workers.push(startNode('services/worker/src/main.ts', { ...env, DATA_DIR: path.join(scratch, name), MODELS_DIR: path.join(scratch, `${name}-models`) }));
  await waitHealthy([urls.preprocessing, urls.training, urls.export], services);
  await until('two workers registered', () => call(`${urls.training}/workers`), (w) => w?.workers?.length === 2, 120_000);
}, 300_000);

afterAll(async () => {
  await Promise.all([...workers, ...services].map((p) => p.stop('SIGKILL')));
  await Promise.allSettled(Object.values(servers ?? {}).map((s) => s.stop()));
  await fs.rm(scratch, { recursive: true, force: true });
});

describe('servers that blink under the scaled-out stack', () => {
  const outages: Record<string, number> = {};
  let trainedJob: string;

  it('PostgreSQL, then Redis, stopped while two jobs train and one is queued, then SeaweedFS while that one stores its adapter: all complete, nothing lost', async () => {
    const form = new FormData();
    form.append('file', new Blob([['question,answer', ...Array.from({ length: 24 }, (_, i) => `"q${i % 4}?","a${i % 4}."`)].join('\n')]), 'qa.csv');
    const upload = await (await fetch(`${urls.preprocessing}/datasets/upload`, { method: 'POST', body: form })).json() as { dataset_id: string };
    const processed = await call(`${urls.preprocessing}/datasets/process`, {
      dataset_name: 'qa', dataset_id: upload.dataset_id,
      config: { field_mappings: { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } }, split_config: { type: 'manual_split', test_size: 4 } },
    });
    const datasetId = processed!.processed_dataset_id as string;

    const submit = async (body: unknown) => (await call(`${urls.training}/train`, body))!.job_id as string;
    const j1 = await submit(trainRequest(datasetId, 'j1', 300, { save_strategy: 'steps', save_steps: 50 }));
    const j2 = await submit(trainRequest(datasetId, 'j2', 300, { save_strategy: 'steps', save_steps: 50 }));
    await until('both jobs training', async () => [await job(j1), await job(j2)], (js) => js.every((j) => j?.status === 'training' && j.progress?.step >= 1));
    // Long enough that its core is still training when the storage goes down below (it stores nothing until the end).
    const j3 = await submit(trainRequest(datasetId, 'j3', 60));
    expect((await job(j3))!.status).toBe('queued');
    const keysBefore = await storedKeys();
    const jobsBefore = (await call(`${urls.training}/jobs`))!.jobs.map((j: { job_id: string }) => j.job_id);

    outages.postgres = await outage(servers.postgres, () => logLines(workerLogs(), 'database unreachable, retrying').length > 0);
    outages.redis = await outage(servers.redis, () => logLines(workerLogs(), 'queue unreachable, retrying: commands wait until Redis answers').length > 0);
    // The queued job starts once a worker is free; the storage goes down while it trains, so its adapter's upload
    // meets the outage (training itself needs no storage: it saves no checkpoint).
    await until('j3 training', () => job(j3), (j) => j?.status === 'training' && j.progress?.step >= 1, 300_000);
    outages.s3Adapter = await outage(servers.s3, storing(`${j3}/adapter/`), 'SIGKILL');

    const done = await until('all three jobs ended', async () => Promise.all([j1, j2, j3].map(job)), (js) => js.every((j) => j && j.status !== 'queued' && j.status !== 'preparing' && j.status !== 'training'), 300_000);
    for (const ended of done) expect(ended!.status, ended!.error).toBe('completed');
    // The outages hit the writes of the jobs that ran through them, and those writes were retried: each job says so.
    for (const id of [j1, j2]) {
      const log = await jobHistory(urls.training, id);
      expect(historyMessages(log)).toContainEqual(expect.stringMatching(/^database unreachable, retrying: worker wrk_\w+ could not reach it for \d+ s/));
      // Its worker, silent while the database was down, was not taken for dead once it came back.
      expect(historyMessages(log).filter((m) => /re-queued/.test(m))).toEqual([]);
      expectProgressForward(log);
    }
    expect(historyMessages(await jobHistory(urls.training, j3))).toContainEqual(expect.stringMatching(/^storage unreachable, retrying: worker wrk_\w+ could not reach it for \d+ s/));
    // Nothing lost: every object and row from before is still there, and each job's adapter is stored.
    expect(await storedKeys()).toEqual(expect.arrayContaining(keysBefore));
    expect((await call(`${urls.training}/jobs`))!.jobs.map((j: { job_id: string }) => j.job_id)).toEqual(expect.arrayContaining(jobsBefore));
    for (const ended of done) expect(await blobs.list(`${blobs.keyFromUri(ended!.artifacts.raw.adapter)!}/`)).not.toEqual([]);
    // Nothing stuck: both workers are alive and idle.
    await until('the workers idle', () => call(`${urls.training}/workers`), (w) => w?.workers?.length === 2 && w.workers.every((x: { current_job_id: string | null }) => x.current_job_id === null));
    trainedJob = j3;
  }, 900_000);

  it('SeaweedFS stopped while an export runs: it waits the outage out and completes, nothing lost', async () => {
    const keysBefore = await storedKeys();
    const from = Date.now();
    await servers.s3.down('SIGKILL');
    const started = await call(`${urls.export}/exports`, { job_id: trainedJob, export_type: 'adapter', destination: ['cloud'] });
    expect(started?.export_id).toBeTruthy();
    const retriedSince = () => logLines(workerLogs(), 'storage unreachable, retrying').some((l) => Number(l.time) > from && String(l.action).includes(trainedJob));
    await until('the export to meet the outage', async () => Date.now() - from >= OUTAGE_MS && retriedSince(), Boolean, 180_000);
    await servers.s3.up();
    outages.s3Export = Date.now() - from;
    const exported = await until('the export ended', () => call(`${urls.export}/exports/${trainedJob}`), (d) => d?.latest_export?.export_id === started!.export_id && d?.latest_export.status !== 'running');
    expect(exported!.latest_export.status, exported!.latest_export.message).toBe('completed');
    expect(await blobs.stat(blobs.keyFromUri(exported!.artifacts.file.adapter)!)).toBeDefined();
    expect(await storedKeys()).toEqual(expect.arrayContaining(keysBefore));
    // What the outages lasted, for the record.
    process.stdout.write(`outages (ms): ${JSON.stringify(outages)}\n`);
  }, 300_000);
});
