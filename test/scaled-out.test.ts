// The scaled-out deployment, all real: PostgreSQL, Redis (BullMQ) and SeaweedFS (S3), the four services as
// separate processes, and workers as separate processes with their own DATA_DIR and MODELS_DIR caches (so each
// is another machine as far as files go). Two jobs train at once, one per worker; a batch inference call is
// answered meanwhile. A worker SIGKILLed mid-job: its job (resume_on_restart) continues on a new worker from the
// checkpoint in the bucket, while the other worker trains on. The pipeline runs end to end through the processes
// with every artifact an object in the bucket. A worker stopped with SIGTERM hands its job back, which resumes on
// another. The last worker SIGKILLed: the services fail its job within WORKER_TIMEOUT_S. A /v1 batch whose worker is
// SIGKILLed mid-batch goes on on another worker, every line answered once. No secret is left in clear in Redis,
// PostgreSQL, the bucket or any log. Then a sweep on two fresh workers runs its two trials at once, its Optuna study in
// the deployment's PostgreSQL (schema optuna) until it ends.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import pg from 'pg';
import { ApiKeysRepository, loadConfig, openBlobStore, openPostgresDatabase, type BlobStore } from '@ftp/platform';
import { startHubStandin, type HubStandin } from './hub-standin/server.ts';
import { apiClient, until } from './support/http.ts';
import { scaledOutEnv } from './servers/scaled-env.ts';
import { firstStepAfterQueued, historyMessages, jobHistory } from './support/job-events.ts';
import { stackPorts, startNode, waitHealthy, type NodeProcess, type StackUrls } from './support/stack.ts';
import { startPrometheus } from './support/prometheus.ts';
import { freePort } from './servers/servers.ts';
import { tinyModelsDir, TINY_MODEL } from './support/tiny-model.ts';

const HUB_TOKEN = 'hf_scaled_out_secret_token_777';
const TRACKER_KEY = 'tracker_scaled_out_secret_key_888';
const WORKER_TIMEOUT_S = 8;
const METRICS_TOKEN = 'scaled-out-operator-metrics-token';

let scratch: string;
let env: Record<string, string>;
let urls: StackUrls;
let hub: HubStandin;
let blobs: BlobStore;
let auth: Record<string, string>;
/** The processed dataset of the first test, which the sweep's trials train on too. */
let datasetId: string;
const services: NodeProcess[] = [];
const workers = new Map<string, NodeProcess>();
/** Each worker's own /metrics port (WORKER_METRICS_PORT). */
const metricsPorts = new Map<string, number>();

const { ok } = apiClient(() => auth);

const job = (id: string) => ok(`${urls.training}/jobs/${id}`);
const liveWorkers = async () => (await ok(`${urls.training}/workers`)).workers as Array<{ worker_id: string; pid: number; current_job_id: string | null; current_jobs: string[]; queues: string[] }>;

/** A worker process with its own scratch folder and model cache: another machine, as far as files go. */
async function startWorkerProcess(name: string, extraEnv: Record<string, string> = {}): Promise<{ process: NodeProcess; workerId: string }> {
  const metricsPort = await freePort();
  metricsPorts.set(name, metricsPort);
  const process = startNode('services/worker/src/main.ts', {
    ...env,
    ...extraEnv,
    DATA_DIR: path.join(scratch, name),
    MODELS_DIR: path.join(scratch, `${name}-models`),
    LOG_LEVEL: 'info',
    WORKER_METRICS_PORT: String(metricsPort),
  });
  const registered = await until(`worker ${name} registered`, liveWorkers, (list) => list.some((w) => w.pid === process.child.pid), 120_000);
  workers.set(name, process);
  return { process, workerId: registered.find((w) => w.pid === process.child.pid)!.worker_id };
}

async function workerRunning(jobId: string): Promise<string> {
  const list = await until(`a worker holding ${jobId}`, liveWorkers, (ws) => ws.some((w) => w.current_job_id === jobId));
  const pid = list.find((w) => w.current_job_id === jobId)!.pid;
  return [...workers].find(([, p]) => p.child.pid === pid)![0];
}

function trainRequest(datasetId: string, name: string, hyperparameters: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    processed_dataset_id: datasetId,
    job_name: name,
    training_config: {
      base_model_id: TINY_MODEL, provider: 'local', method: 'LoRA', trainer_type: 'sft',
      hyperparameters: { logging_steps: 1, learning_rate: 0.01, batch_size: 4, gradient_accumulation_steps: 1, max_length: 32, save_strategy: 'no', ...hyperparameters },
      ...extra,
    },
  };
}

/** Every string value stored anywhere in Redis under any key. */
async function redisText(url: string): Promise<string> {
  const redis = new Redis(url);
  try {
    const parts: string[] = [];
    for (const key of await redis.keys('*')) {
      const type = await redis.type(key);
      const value =
        type === 'string' ? await redis.get(key)
        : type === 'hash' ? JSON.stringify(await redis.hgetall(key))
        : type === 'list' ? JSON.stringify(await redis.lrange(key, 0, -1))
        : type === 'set' ? JSON.stringify(await redis.smembers(key))
        : type === 'zset' ? JSON.stringify(await redis.zrange(key, '0', '-1'))
        : type === 'stream' ? JSON.stringify(await redis.xrange(key, '-', '+'))
        : '';
      parts.push(key, value ?? '');
    }
    return parts.join('\n');
  } finally {
    redis.disconnect();
  }
}

/** Every row of every table of the database, as text. */
async function postgresText(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const tables = (await client.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).rows.map((r) => r.tablename as string);
    const parts: string[] = [];
    for (const table of tables) parts.push(...(await client.query(`SELECT t::text AS row FROM "${table}" t`)).rows.map((r) => r.row as string));
    return parts.join('\n');
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-scaled-'));
  hub = await startHubStandin({ token: HUB_TOKEN });
  const ports = await stackPorts();
  urls = ports.urls;
  env = {
    ...(await scaledOutEnv(inject('servers'), 'scaled-out')),
    ...ports.env,
    AUTH_MODE: 'token',
    METRICS_TOKEN,
    WORKER_TIMEOUT_S: String(WORKER_TIMEOUT_S),
    HF_ENDPOINT: hub.url,
    FAST_ENGINE_THREADS: '1',
    LOG_LEVEL: 'info',
  };
  const config = loadConfig({ ...env, DATA_DIR: path.join(scratch, 'cli') });
  // An API key before any service starts (each would otherwise make a first key of its own).
  const db = await openPostgresDatabase(config.DATABASE_URL!);
  auth = { authorization: `Bearer ${(await new ApiKeysRepository(db).create('alice', 'scaled-out test')).key}` };
  await db.close();
  // The base model goes into the store (the bucket) the way an operator puts it there: `pnpm models add`.
  execFileSync(process.execPath, ['--import', 'tsx', 'services/stack/src/models.ts', 'add', path.join(await tinyModelsDir(), TINY_MODEL), TINY_MODEL], {
    cwd: fileURLToPath(new URL('../', import.meta.url)),
    env: { ...process.env, ...env, DATA_DIR: path.join(scratch, 'cli') },
  });
  blobs = await openBlobStore(config);
  for (const service of Object.keys(urls)) services.push(startNode(`services/${service}/src/server.ts`, { ...env, DATA_DIR: path.join(scratch, service) }));
  await waitHealthy(Object.values(urls), services);
}, 300_000);

afterAll(async () => {
  await Promise.all([...workers.values(), ...services].map((p) => p.stop('SIGKILL')));
  await hub?.close();
  await fs.rm(scratch, { recursive: true, force: true });
});

describe('the scaled-out stack: separate processes on PostgreSQL, Redis and S3', () => {
  it('trains on two workers at once, survives killed and stopped workers, and runs the pipeline with every artifact in the bucket', async () => {
    // Upload and process: the raw file and the splits are objects in the bucket.
    const csv = ['question,answer', ...Array.from({ length: 24 }, (_, i) => `"q${i % 4}?","a${i % 4}."`)].join('\n');
    const form = new FormData();
    form.append('file', new Blob([csv]), 'qa.csv');
    const upload = await ok(`${urls.preprocessing}/datasets/upload`, { method: 'POST', body: form });
    expect(upload.cloud_path).toMatch(new RegExp(`^s3://${env.S3_BUCKET}/`));
    const processed = await ok(`${urls.preprocessing}/datasets/process`, {
      method: 'POST',
      json: {
        dataset_name: 'qa', dataset_id: upload.dataset_id,
        config: { field_mappings: { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } }, split_config: { type: 'manual_split', test_size: 4 } },
      },
    });
    datasetId = processed.processed_dataset_id;

    // Two workers, two long jobs: one each. J1 asks to be resumed if its worker dies; it saves every 10 steps.
    await startWorkerProcess('a');
    await startWorkerProcess('b');
    const submit = async (body: unknown) => (await ok(`${urls.training}/train`, { method: 'POST', json: body })).job_id as string;
    const j1 = await submit(trainRequest(datasetId, 'j1', { max_steps: 100_000, save_strategy: 'steps' }, { resume_on_restart: true }));
    const j2 = await submit(trainRequest(datasetId, 'j2', { max_steps: 100_000, save_strategy: 'steps' }));
    await until('both jobs training', async () => [await job(j1), await job(j2)], (js) => js.every((j) => j.status === 'training' && j.progress?.step >= 1));
    const [onJ1, onJ2] = [await workerRunning(j1), await workerRunning(j2)];
    expect(onJ1).not.toBe(onJ2);
    // A batch inference call is answered while both train (its own lane on the workers).
    const base = await ok(`${urls.inference}/inference/batch`, { method: 'POST', json: { model_source: 'base', base_model_id: TINY_MODEL, max_new_tokens: 4, messages: [[{ role: 'user', content: 'hi' }]] } });
    expect(base.results).toHaveLength(1);

    // SIGKILL J1's worker once a checkpoint is in the bucket: J1 goes back to the queue; J2 trains on.
    await until('a checkpoint of j1 stored whole', async () => (await blobs.list(`jobs/alice/${j1}/checkpoints/`)).filter((b) => b.key.endsWith('/.complete')).length, (n) => n > 0);
    const j2Before = (await job(j2)).progress.step as number;
    await workers.get(onJ1)!.stop('SIGKILL');
    await until('j1 queued again', () => job(j1), (j) => j.status === 'queued', (WORKER_TIMEOUT_S + 20) * 1000);
    expect((await job(j2)).status).toBe('training');
    expect((await until('j2 going on', () => job(j2), (j) => j.progress.step > j2Before)).status).toBe('training');

    // A new worker (empty cache) takes J1 and continues from the stored checkpoint, not from step 0.
    const resumed = firstStepAfterQueued(urls.training, j1, 2, auth);
    await startWorkerProcess('c');
    expect(await resumed).toBeGreaterThan(10);

    // J3, short and with secrets, waits for a free worker; cancelling J1 frees one.
    const j3 = await submit({
      ...trainRequest(datasetId, 'j3', { max_steps: 12 }, { tracker_config: { api_key: TRACKER_KEY, project: 'p' } }),
      hub_token: HUB_TOKEN,
    });
    expect((await job(j3)).status).toBe('queued');
    await ok(`${urls.training}/jobs/${j1}/cancel`, { method: 'POST' });
    expect((await until('j1 cancelled', () => job(j1), (j) => j.status === 'failed')).error).toBe('cancelled by user');
    // Its history says what happened: the re-queue after its worker died (from which checkpoint), the resume.
    const j1History = historyMessages(await jobHistory(urls.training, j1, auth));
    const requeuedFrom = Number(j1History.map((m) => /^re-queued after worker wrk_\w+ stopped \(last checkpoint step (\d+)\)$/.exec(m)?.[1]).find(Boolean));
    expect(requeuedFrom, j1History.join('\n')).toBeGreaterThanOrEqual(10);
    expect(j1History).toContainEqual(expect.stringMatching(new RegExp(`^resumed from step ${requeuedFrom} on wrk_\\w+$`)));
    const trained = await until('j3 trained', () => job(j3), (j) => j.status === 'completed' || j.status === 'failed');
    expect(trained.status, trained.error).toBe('completed');
    // The dead worker's entry of J1: BullMQ's stalled checker puts it back in wait, and then either the next worker
    // free to take train work fails it unrun (one is free now that J3 is done), or a reconciler round finds it waiting
    // for a finished row first and removes it; either way a note naming the job, not an error. Waited for while the
    // workers live.
    const outputs = () => [...services, ...workers.values()].map((p) => p.output()).join('\n');
    const dropped = (text: string) =>
      text.includes(`train work ${j1} of a stopped worker was dropped by the queue; `) ||
      text.split('\n').some((line) => line.includes(`"id":"${j1}"`) && line.includes('queue entry removed: its row is finished or gone'));
    await until('the stalled entry of j1 noted', async () => outputs(), dropped, 120_000);

    // The pipeline through the processes: export to the bucket and to the hub, batch inference, evaluation.
    const exported = await ok(`${urls.export}/exports`, { method: 'POST', json: { job_id: j3, export_type: 'adapter', destination: ['cloud', 'hub'], hub_repo_id: 'alice/tiny', hub_token: HUB_TOKEN } });
    const details = await until('export', () => ok(`${urls.export}/exports/${j3}`), (d) => d.latest_export?.export_id === exported.export_id && d.latest_export.status !== 'running');
    expect(details.latest_export.status, details.latest_export.message).toBe('completed');
    const answers = await ok(`${urls.inference}/inference/batch`, { method: 'POST', json: { model_source: 'adapter', job_id: j3, max_new_tokens: 6, messages: [[{ role: 'user', content: 'q1?' }], [{ role: 'user', content: 'q2?' }]] } });
    expect(answers.results).toHaveLength(2);
    const evaluation = await ok(`${urls.inference}/evaluation`, { method: 'POST', json: { model_source: 'adapter', job_id: j3, dataset_id: datasetId, task_type: 'qa', max_new_tokens: 6 } });
    expect(evaluation.num_samples).toBe(4);
    expect(Object.keys(evaluation.metrics).sort()).toEqual(['exact_match', 'f1']);
    const download = await fetch(`${urls.export}/exports/${j3}/download?type=adapter`, { headers: auth });
    expect(download.status).toBe(200);
    // Every artifact is an object in the bucket.
    const artifactUris = [upload.cloud_path, ...processed.full_splits.map((s: { path: string }) => s.path), details.artifacts.raw.adapter, details.artifacts.file.adapter];
    for (const uri of artifactUris) expect(uri).toMatch(new RegExp(`^s3://${env.S3_BUCKET}/`));
    for (const uri of [upload.cloud_path, details.artifacts.file.adapter]) expect(await blobs.stat(blobs.keyFromUri(uri)!)).toBeDefined();
    expect(await blobs.list(`${blobs.keyFromUri(details.artifacts.raw.adapter)!}/`)).not.toEqual([]);
    expect(details.artifacts.hub.adapter).toBe(`${hub.url}/alice/tiny`);

    // Metrics, scraped by a real Prometheus with the operator's token from every service and every live worker's own
    // port: what the workers trained and generated, BullMQ's own counts of the lanes and the live workers as the
    // services read them, and the repairs: J1 re-queued after its worker's death, by whichever process saw it first.
    const live = [...workers.keys()].filter((name) => workers.get(name)!.child.exitCode === null && workers.get(name)!.child.signalCode === null);
    const prometheus = await startPrometheus([
      ...Object.entries(urls).map(([service, url]) => ({ job: service, address: new URL(url).host, bearer: METRICS_TOKEN })),
      ...live.map((name) => ({ job: `worker-${name}`, address: `127.0.0.1:${metricsPorts.get(name)}`, bearer: METRICS_TOKEN })),
    ]);
    try {
      const targets = Object.keys(urls).length + live.length;
      await until('every process scraped', () => prometheus.query('up'), (up) => up.length === targets && up.every((t) => t.value === 1), 60_000);
      expect(await prometheus.sum('ftp_jobs_finished_total{job=~"worker-.*",status="completed",trainer="sft"}')).toBeGreaterThanOrEqual(1);
      expect(await prometheus.sum('ftp_job_phase_duration_seconds_count{job=~"worker-.*",phase="training",trainer="sft"}')).toBeGreaterThanOrEqual(2);
      expect(await prometheus.sum('ftp_generation_duration_seconds_count{job=~"worker-.*",kind="evaluation"}')).toBeGreaterThanOrEqual(1);
      expect(await prometheus.sum('ftp_workers_alive{job="training",queue="train"}')).toBe(live.length);
      // BullMQ's own exporter, one group per metric across the ten lanes (Prometheus refuses a text that repeats one)
      expect(await prometheus.sum('bullmq_job_count{job="training",queue="train",state="completed"}')).toBeGreaterThanOrEqual(1);
      expect((await prometheus.query('bullmq_job_completed_total{job="training"}')).map((s) => s.metric.queue).sort()).toEqual(['augment', 'batch', 'benchmark', 'evaluate', 'export', 'infer', 'preflight', 'session', 'sweep', 'train']);
      expect(await prometheus.sum('ftp_reconciler_repairs_total{repair="job_requeued"}')).toBeGreaterThanOrEqual(1);
    } finally {
      await prometheus.stop();
    }

    // SIGTERM J2's worker: it checkpoints, stores that checkpoint, hands J2 back, and another worker continues it.
    const stepAtStop = (await job(j2)).progress.step as number;
    const handedBack = firstStepAfterQueued(urls.training, j2, 2, auth);
    const stopping = workers.get(await workerRunning(j2))!;
    await stopping.stop('SIGTERM');
    expect(stopping.child.exitCode).toBe(0);
    expect(await handedBack).toBeGreaterThanOrEqual(stepAtStop);
    const last = await workerRunning(j2);
    expect(await liveWorkers()).toHaveLength(1);

    // The last worker SIGKILLed mid-job: no worker is left to notice, the services fail the job in time.
    await until('j2 training again', () => job(j2), (j) => j.status === 'training');
    const killedAt = Date.now();
    await workers.get(last)!.stop('SIGKILL');
    const failed = await until('j2 failed', () => job(j2), (j) => j.status !== 'training', (WORKER_TIMEOUT_S + 20) * 1000);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/^the worker wrk_[0-9a-f]+ stopped/);
    expect(Date.now() - killedAt).toBeLessThan((WORKER_TIMEOUT_S + 20) * 1000);
    expect(await liveWorkers()).toEqual([]);
    const j2History = historyMessages(await jobHistory(urls.training, j2, auth));
    const handedFrom = Number(j2History.map((m) => /^re-queued after worker wrk_\w+ stopped \(SIGTERM; last checkpoint step (\d+)\)$/.exec(m)?.[1]).find(Boolean));
    expect(handedFrom, j2History.join('\n')).toBeGreaterThanOrEqual(stepAtStop);
    expect(j2History).toContainEqual(expect.stringMatching(new RegExp(`^resumed from step ${handedFrom} on wrk_\\w+$`)));
    // No worker logged another's stalled entry as an error of its own.
    expect(outputs()).not.toMatch(/was failed by the queue: job stalled/);

    // A /v1 batch on two batch workers: the one answering it is SIGKILLed once some lines are recorded; the other
    // takes it over once the watchdog has seen the death, and goes on from the first line not answered.
    const d = await startWorkerProcess('d', { WORKER_QUEUES: 'batch' });
    const e = await startWorkerProcess('e', { WORKER_QUEUES: 'batch' });
    const lines = Array.from({ length: 960 }, (_, i) => JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: TINY_MODEL, messages: [{ role: 'user', content: `Count to ${i}.` }], temperature: 0, max_tokens: 8 } }));
    const batchInput = new FormData();
    batchInput.append('purpose', 'batch');
    batchInput.append('file', new Blob([`${lines.join('\n')}\n`]), 'batch.jsonl');
    const inputFile = await ok(`${urls.openai}/v1/files`, { method: 'POST', body: batchInput });
    const batch = await ok(`${urls.openai}/v1/batches`, { method: 'POST', json: { input_file_id: inputFile.id, endpoint: '/v1/chat/completions', completion_window: '24h' } });
    const pgClient = new pg.Client({ connectionString: env.DATABASE_URL });
    await pgClient.connect();
    try {
      const answered = async () => Number((await pgClient.query('SELECT count(*) AS n FROM batch_results WHERE batch_id = $1', [batch.id])).rows[0].n);
      const holder = async () => (await pgClient.query('SELECT worker_id FROM batches WHERE batch_id = $1', [batch.id])).rows[0].worker_id as string | null;
      await until('a chunk of the batch answered', answered, (n) => n > 0, 180_000);
      const holding = await holder();
      const [dying, surviving] = holding === d.workerId ? [d, e] : [e, d];
      expect([d.workerId, e.workerId]).toContain(holding);
      await dying.process.stop('SIGKILL');
      const answeredAtKill = await answered();
      expect(answeredAtKill).toBeLessThan(lines.length);
      const ended = await until('the batch ended', () => ok(`${urls.openai}/v1/batches/${batch.id}`), (b) => !['validating', 'in_progress', 'finalizing'].includes(b.status), 300_000);
      expect(ended).toMatchObject({ status: 'completed', request_counts: { total: lines.length, completed: lines.length, failed: 0 } });
      expect(await holder()).toBeNull();
      const output = (await (await fetch(`${urls.openai}/v1/files/${ended.output_file_id}/content`, { headers: auth })).text()).trim().split('\n').map((l) => JSON.parse(l) as { custom_id: string; response: { status_code: number } });
      expect(output.map((l) => l.custom_id)).toEqual(lines.map((_, i) => `line-${i}`));
      expect(output.every((l) => l.response.status_code === 200)).toBe(true);
      expect(surviving.process.output()).toContain('batch ended');
      expect(outputs()).toMatch(new RegExp(`"batchId":"${batch.id}"[^\n]*batch queued again`));
    } finally {
      await pgClient.end();
    }

    // No secret in clear anywhere: Redis, every PostgreSQL row, the bucket, any process's log.
    const stores = [await redisText(env.REDIS_URL!), await postgresText(env.DATABASE_URL!)];
    for (const blob of await blobs.list('')) {
      const chunks: Buffer[] = [];
      for await (const chunk of await blobs.get(blob.key)) chunks.push(chunk as Buffer);
      stores.push(Buffer.concat(chunks).toString('latin1'));
    }
    stores.push(...[...services, ...workers.values()].map((p) => p.output()));
    for (const secret of [HUB_TOKEN, TRACKER_KEY, auth.authorization!.slice('Bearer '.length)]) {
      expect(stores.filter((text) => text.includes(secret))).toEqual([]);
    }
  }, 1_500_000);

  it('runs a sweep’s trials on two workers at once, its Optuna study in the deployment’s PostgreSQL', async () => {
    await Promise.all([startWorkerProcess('f'), startWorkerProcess('g')]);
    const created = await ok(`${urls.training}/sweeps`, {
      method: 'POST',
      json: {
        name: 'two at once', budget: { trials: 2, parallel: 2 }, sampler: 'random', pruner: 'none', seed: 3,
        space: { 'hyperparameters.learning_rate': { type: 'float', low: 0.001, high: 0.05, log: true } },
        // Long enough for both to be seen training at once (GET /workers shows what each runs at its heartbeats).
        training_request: trainRequest(datasetId, 'trial', { max_steps: 200 }, { eval_config: { eval_strategy: 'steps', eval_steps: 100 } }),
      },
    });
    const sweep = () => ok(`${urls.training}/sweeps/${created.sweep_id}`);
    const pgClient = new pg.Client({ connectionString: env.DATABASE_URL });
    await pgClient.connect();
    // Optuna makes its tables with the first study.
    const studies = async () =>
      (await pgClient.query("SELECT to_regclass('optuna.studies') AS t")).rows[0].t === null ? 0 : Number((await pgClient.query('SELECT count(*) AS n FROM optuna.studies')).rows[0].n);
    try {
      // Both trials held by two workers at the same moment, while the study is a row of PostgreSQL's optuna schema.
      const both = await until('both trials training at once', async () => {
        const now = await sweep();
        const trials = (now.trials as Array<{ job_id: string | null }>).map((t) => t.job_id);
        // current_jobs: the worker that holds the sweep lists its id beside its trial's.
        const holders = (await liveWorkers()).filter((w) => w.current_jobs.some((id) => trials.includes(id)));
        return { holders, studies: await studies(), sweep: now };
      }, (x) => x.holders.length === 2, 180_000);
      expect(new Set(both.holders.map((w) => w.worker_id)).size).toBe(2);
      expect(both.studies).toBe(1);
      const ended = await until('the sweep ended', sweep, (s) => !['queued', 'running'].includes(s.status), 300_000);
      expect(ended, JSON.stringify(ended)).toMatchObject({ status: 'completed', error: null });
      expect(ended.trials.map((t: { state: string }) => t.state)).toEqual(['completed', 'completed']);
      expect(ended.best_job_id).toBe(ended.trials.reduce((a: { value: number }, b: { value: number }) => (b.value < a.value ? b : a)).job_id);
      // Ended, its study is removed from the database (just after the sweep's row says so).
      await until('the ended sweep’s study removed', studies, (n) => n === 0, 60_000);
    } finally {
      await pgClient.end();
    }
  }, 600_000);
});
