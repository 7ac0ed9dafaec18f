// The reconciler on the real queue (BullMQ on the Redis of test/servers, a key prefix of its own per platform) and
// the rows of a real metadata store: for each lane (jobs, exports, datasets, batches, evaluations), a row waiting with no queue entry is queued again once, a row a
// live worker let go of is resumed, failed or queued again, an entry whose row is finished is removed, and a
// request whose producer is gone is removed after its time limit. Two processes reconciling at once act once.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { newId, type Platform, type QueueDefinition } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { EvaluationFields } from '@ftp/schema';
import { augmentQueue, batchQueue, benchmarkQueue, evaluateQueue, exportQueue, inferQueue, preflightQueue, trainingQueue } from '../src/queues/index.ts';
import { reconcile } from '../src/runtime/index.ts';

let platform: TestPlatform;
const queueEnv = () => ({ REDIS_URL: inject('servers').redisUrl, REDIS_PREFIX: `reconciler-${randomBytes(6).toString('hex')}` });

beforeAll(async () => {
  platform = await openTestPlatform({ ...queueEnv(), WORKER_TIMEOUT_S: '3600' });
});
afterAll(async () => {
  await platform?.close();
});

/** A worker row whose heartbeat is fresh and lists `holds` as its work. */
async function liveWorker(holds: string[] = []): Promise<string> {
  const workerId = newId('wrk');
  await platform.workers.register({ worker_id: workerId, host: 'test', pid: 1, devices: [], queues: ['train', 'export', 'augment'] });
  await platform.workers.heartbeat(workerId, holds);
  return workerId;
}

/** Makes a row look as if it last changed `seconds` ago (past the reconciler's grace periods). */
async function age(table: string, idColumn: string, id: string, seconds = 120): Promise<void> {
  await platform.db.query(`UPDATE ${table} SET updated_at = now() - make_interval(secs => $2) WHERE ${idColumn} = $1`, [id, seconds]);
}

async function trainingJob(config: Record<string, unknown> = {}): Promise<string> {
  const jobId = newId('job');
  await platform.jobs.insert({
    job_id: jobId, user_id: 'local', job_name: 'lost', processed_dataset_id: 'pd_x', base_model_id: 'tiny', modality: 'text',
    training_config: { method: 'LoRA', provider: 'local', base_model_id: 'tiny', ...config }, blob_prefix: `jobs/local/${jobId}/`, tracker_url: null,
  });
  return jobId;
}

async function exportRow(jobId: string): Promise<string> {
  const exportId = newId('exp');
  await platform.exports.insert({ export_id: exportId, job_id: jobId, user_id: 'local', type: 'adapter', destination: ['cloud'], hub_repo_id: null, gguf_quantization: null, message: 'queued' });
  return exportId;
}

async function processingDataset(): Promise<string> {
  const id = newId('pd');
  await platform.datasets.insertProcessed({
    processed_dataset_id: id, user_id: 'local', dataset_id: 'ds_x', dataset_name: 'd', dataset_subset: 'default', dataset_source: 'upload',
    processing_mode: 'language_modeling', modality: 'text', config: {}, splits: [], num_examples: 0, columns: [], blob_prefix: `processed/local/${id}/`,
    status: 'processing', progress: { done: 3, total: 10, by_method: {} },
  });
  return id;
}

/** Polls `read` until `done` holds (30 s at most). */
async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const entriesOf = async <P,>(queue: QueueDefinition<P, unknown>, idOf: (p: P) => string) => (await platform.queue.pending(queue)).map((e) => idOf(e.payload));
const messages = async (jobId: string) => (await platform.jobs.events(jobId)).filter((e) => e.kind === 'log').map((e) => String(e.data.message));

describe('the reconciler', () => {
  it('training jobs: re-queues a queued job the queue lost, once; resumes or fails jobs a live worker let go of; drops entries of finished jobs', async () => {
    const lost = await trainingJob();
    await age('training_jobs', 'job_id', lost);
    const fresh = await trainingJob(); // just submitted: its entry may be on its way
    const finished = await trainingJob();
    await platform.queue.add(trainingQueue, { jobId: finished });
    await platform.jobs.update(finished, { status: 'failed', error: 'cancelled by user' }, ['queued']);

    const resuming = await trainingJob({ resume_on_restart: true });
    const failing = await trainingJob();
    const held = await trainingJob();
    const letGo = await liveWorker([]);
    const holding = await liveWorker([held]);
    for (const [jobId, workerId] of [[resuming, letGo], [failing, letGo], [held, holding]] as const) {
      await platform.jobs.update(jobId, { status: 'training', worker_id: workerId }, ['queued']);
      await age('training_jobs', 'job_id', jobId);
    }
    await platform.jobs.recordCheckpoint({ job_id: resuming, step: 40, epoch: 1, train_loss: 1, eval_loss: null, size_bytes: 10 });
    await platform.workers.heartbeat(letGo, []);
    await platform.workers.heartbeat(holding, [held]);

    // Two processes reconciling at the same moment.
    await Promise.all([reconcile(platform), reconcile(platform)]);

    const queued = await entriesOf(trainingQueue, (p) => p.jobId);
    expect(queued.filter((id) => id === lost)).toHaveLength(1);
    expect(queued.filter((id) => id === resuming)).toHaveLength(1);
    expect(queued).not.toContain(fresh);
    expect(queued).not.toContain(finished);
    expect(await messages(lost)).toEqual(['re-queued: its queue entry was lost (the queue restarted without it, or adding it failed)']);

    expect(await platform.jobs.getForWorker(resuming)).toMatchObject({ status: 'queued', worker_id: null });
    expect(await messages(resuming)).toEqual([`re-queued after worker ${letGo} stopped working on it without finishing it (last checkpoint step 40)`]);
    expect(await platform.jobs.getForWorker(failing)).toMatchObject({ status: 'failed', error: expect.stringMatching(new RegExp(`^the worker ${letGo} stopped working on this job without finishing it`)) });
    expect(await platform.jobs.getForWorker(held)).toMatchObject({ status: 'training', worker_id: holding });
    expect(platform.logText()).toContain('queue entry removed: its row is finished or gone');
  });

  it('exports: re-queues one the queue lost and one a live worker let go of; drops the entry of a finished one', async () => {
    const jobId = await trainingJob();
    const lost = await exportRow(jobId);
    await age('exports', 'export_id', lost);
    const letGoRow = await exportRow(jobId);
    const letGo = await liveWorker([]);
    await platform.exports.claim(letGoRow, letGo);
    await age('exports', 'export_id', letGoRow);
    await platform.workers.heartbeat(letGo, []);
    const done = await exportRow(jobId);
    await platform.queue.add(exportQueue, { exportId: done });
    await platform.exports.update(done, { status: 'completed', finished_at: new Date() });

    await Promise.all([reconcile(platform), reconcile(platform)]);

    const queued = await entriesOf(exportQueue, (p) => p.exportId);
    expect(queued.sort()).toEqual([letGoRow, lost].sort());
    expect(await platform.exports.getForWorker(letGoRow)).toMatchObject({ status: 'running', worker_id: null, message: expect.stringContaining(`worker ${letGo} stopped working on it`) });
  });

  it('datasets being augmented: re-queues one the queue lost and one a live worker let go of; drops the entry of a ready one', async () => {
    const lost = await processingDataset();
    await age('processed_datasets', 'processed_dataset_id', lost);
    const letGoRow = await processingDataset();
    const letGo = await liveWorker([]);
    await platform.datasets.claimProcessing(letGoRow, letGo);
    await age('processed_datasets', 'processed_dataset_id', letGoRow);
    await platform.workers.heartbeat(letGo, []);
    const ready = await processingDataset();
    await platform.queue.add(augmentQueue, { processedDatasetId: ready });
    await platform.datasets.failProcessing(ready, null, 'gone wrong');

    await Promise.all([reconcile(platform), reconcile(platform)]);

    expect((await entriesOf(augmentQueue, (p) => p.processedDatasetId)).sort()).toEqual([letGoRow, lost].sort());
    expect(await platform.datasets.getForWorker(letGoRow)).toMatchObject({ status: 'processing', worker_id: null, progress: null });
  });

  it('batches: re-queues one the queue lost and one a live worker let go of; drops the entry of a finished one', async () => {
    const batch = async () => (await platform.batches.insert({
      batch_id: newId('batch'), user_id: 'local', endpoint: '/v1/chat/completions', input_file_id: 'ds_x', completion_window: '24h', metadata: null, expires_at: new Date(Date.now() + 3600_000),
    })).batch_id;
    const lost = await batch();
    await age('batches', 'batch_id', lost);
    const letGoRow = await batch();
    const letGo = await liveWorker([]);
    await platform.batches.claim(letGoRow, letGo);
    await age('batches', 'batch_id', letGoRow);
    await platform.workers.heartbeat(letGo, []);
    const done = await batch();
    await platform.queue.add(batchQueue, { batchId: done });
    await platform.batches.update(done, { status: 'completed', completed_at: new Date() });

    await Promise.all([reconcile(platform), reconcile(platform)]);

    expect((await entriesOf(batchQueue, (p) => p.batchId)).sort()).toEqual([letGoRow, lost].sort());
    expect(await platform.batches.getForWorker(letGoRow)).toMatchObject({ status: 'validating', worker_id: null });
  });

  it('evaluations: re-queues one the queue lost and one a live worker let go of; drops the entry of a finished one', async () => {
    const evaluation = async () => {
      const id = newId('evalrun');
      await platform.evaluationRuns.insert({
        evaluation_id: id, user_id: 'local', job_id: null, model_source: 'base', checkpoint_step: null, base_model_id: 'tiny',
        request: { model_source: 'base', base_model_id: 'tiny', with_base: false, benchmarks: { tasks: ['qa'], apply_chat_template: false } },
      });
      return id;
    };
    const lost = await evaluation();
    await age('evaluation_runs', 'evaluation_id', lost);
    const letGoRow = await evaluation();
    const letGo = await liveWorker([]);
    await platform.evaluationRuns.claim(letGoRow, letGo);
    await age('evaluation_runs', 'evaluation_id', letGoRow);
    await platform.workers.heartbeat(letGo, []);
    const done = await evaluation();
    await platform.queue.add(benchmarkQueue, { evaluationId: done });
    await platform.evaluationRuns.cancel('local', done);

    await Promise.all([reconcile(platform), reconcile(platform)]);

    expect((await entriesOf(benchmarkQueue, (p) => p.evaluationId)).sort()).toEqual([letGoRow, lost].sort());
    expect(await platform.evaluationRuns.getForWorker(letGoRow)).toMatchObject({ status: 'queued', worker_id: null });
    expect((await platform.evaluationRuns.events(lost)).at(-1)!.data).toMatchObject({ message: expect.stringContaining('its queue entry was lost') });
  });

  const requestLanes: Array<[string, QueueDefinition<never, unknown>, unknown, string]> = [
    ['evaluation', evaluateQueue as QueueDefinition<never, unknown>, { userId: 'local', request: EvaluationFields.omit({ hub_token: true }).parse({ model_source: 'base', base_model_id: 'tiny', dataset_id: 'pd_x' }) }, 'INFERENCE_TIMEOUT_MS'],
    ['pre-flight', preflightQueue as QueueDefinition<never, unknown>, { userId: 'local', processed_dataset_id: 'pd_x', training_config: { base_model_id: 'tiny' } }, 'PREFLIGHT_TIMEOUT_MS'],
    ['inference', inferQueue as QueueDefinition<never, unknown>, {
      userId: 'local', model: { model_source: 'base', base_model_id: 'tiny', use_fast_engine: false }, conversations: [[{ role: 'user', content: 'hi' }]],
      generation: { max_new_tokens: 4, temperature: 0 },
    }, 'INFERENCE_TIMEOUT_MS'],
  ];

  it.each(requestLanes)('%s requests: one whose producer died is removed once its time limit has passed', async (_name, queue, payload, limitSetting) => {
    const env = { ...queueEnv(), [limitSetting]: '500' };
    // The API process that asked, gone before any worker took the request: its entry stays in Redis.
    const producer: Platform = await openTestPlatform(env);
    const asked = producer.queue.request(queue, payload as never).catch(() => undefined);
    const [entry] = await until('the request queued', () => producer.queue.pending(queue), (entries) => entries.length > 0);
    expect(entry!.state).toBe('waiting');
    await producer.close();
    await asked;

    const reconciling = await openTestPlatform(env);
    try {
      await until(`the ${queue.name} request removed`, async () => {
        await reconcile(reconciling);
        return reconciling.queue.pending(queue);
      }, (entries) => entries.length === 0);
      expect(reconciling.logText()).toContain('request removed from the queue: it waited past its time limit');
    } finally {
      await reconciling.close();
    }
  });
});
