// The work of a worker that went silent (recoverOrphans, run by every process's watchdog): its jobs fail naming it,
// or go back to the queue when they asked to resume (or, asked to pause, are paused); its exports and the datasets it augmented are queued again, and
// so are its evaluations with benchmarks, until one has lost a worker on each of its attempts (then it fails); and
// the exports finish on a live worker (a hub export whose sealed token is gone fails saying to start it again). Each row is acted on once when two
// processes notice at the same time, and a live worker's job is left alone. No ML: the job's adapter is a few
// stored files, and an adapter export only archives them.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId, type ExportRow, type TrainingJobRow } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { augmentQueue, benchmarkQueue, HUB_TOKEN_LOST, MAX_EVALUATION_ATTEMPTS, trainingQueue } from '@ftp/jobs/queues';
import { recoverOrphans } from '@ftp/jobs/runtime';
import { startWorker, type WorkerHandle } from '../src/index.ts';

let platform: TestPlatform;
let worker: WorkerHandle | undefined;

beforeAll(async () => {
  platform = await openTestPlatform();
});
afterAll(async () => {
  await worker?.stop();
  await platform.close();
});

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`still not there: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function register(workerId: string, silentForSeconds = 0): Promise<void> {
  await platform.workers.register({ worker_id: workerId, host: 'test', pid: 1, devices: [], queues: ['train', 'export'] });
  await platform.db.query(`UPDATE workers SET heartbeat_at = now() - make_interval(secs => $2) WHERE worker_id = $1`, [workerId, silentForSeconds]);
}

async function runningJob(workerId: string, config: Record<string, unknown> = {}): Promise<string> {
  const jobId = newId('job');
  await platform.jobs.insert({
    job_id: jobId, user_id: 'local', job_name: 'orphan', processed_dataset_id: 'pd_x', base_model_id: 'tiny', modality: 'text',
    training_config: { method: 'LoRA', provider: 'local', base_model_id: 'tiny', ...config }, blob_prefix: `jobs/local/${jobId}/`, tracker_url: null,
  });
  await platform.jobs.update(jobId, { status: 'training', worker_id: workerId }, ['queued']);
  return jobId;
}

const job = async (id: string) => (await platform.jobs.getForWorker(id)) as TrainingJobRow;
const exportRow = async (id: string) => (await platform.exports.getForWorker(id)) as ExportRow;

it('fails or re-queues a silent worker’s work once, and leaves a live worker’s alone', async () => {
  await register('wrk_dead', 3600);
  await register('wrk_live');
  const failing = await runningJob('wrk_dead');
  const resuming = await runningJob('wrk_dead', { resume_on_restart: true });
  const alive = await runningJob('wrk_live');
  const ghost = await runningJob('wrk_never_registered');
  // The user asked it to pause, and its worker died before it could: it is paused, and waits in no queue.
  const pausing = await runningJob('wrk_dead', { resume_on_restart: true });
  await platform.jobs.requestPause('local', pausing);

  // A completed job with a stored adapter, and two of its exports that wrk_dead had taken.
  const stored = await runningJob('wrk_live');
  const prefix = `jobs/local/${stored}/`;
  await platform.blobs.put(`${prefix}adapter/adapter_config.json`, '{"r": 4}');
  await platform.blobs.put(`${prefix}adapter/adapter_model.safetensors`, Buffer.alloc(64, 7));
  const adapterUri = platform.blobs.uri(`${prefix}adapter`);
  await platform.jobs.update(stored, { status: 'completed', adapter_path: adapterUri, artifacts: { file: {}, raw: { adapter: adapterUri }, hub: {} } });
  const base = { job_id: stored, user_id: 'local', type: 'adapter' as const, gguf_quantization: null, message: 'queued' };
  const cloud = newId('exp');
  const toHub = newId('exp');
  await platform.exports.insert({ ...base, export_id: cloud, destination: ['cloud'], hub_repo_id: null });
  await platform.exports.insert({ ...base, export_id: toHub, destination: ['hub'], hub_repo_id: 'local/tiny' });
  for (const id of [cloud, toHub]) await platform.exports.claim(id, 'wrk_dead');

  // Two datasets being augmented, one on each worker.
  const processing = async (workerId: string) => {
    const id = newId('pd');
    await platform.datasets.insertProcessed({
      processed_dataset_id: id, user_id: 'local', dataset_id: 'ds_x', dataset_name: 'd', dataset_subset: 'default', dataset_source: 'upload',
      processing_mode: 'language_modeling', modality: 'text', config: {}, splits: [], num_examples: 0, columns: [], blob_prefix: `processed/local/${id}/`,
      status: 'processing', progress: { done: 3, total: 10, by_method: {} },
    });
    await platform.datasets.claimProcessing(id, workerId);
    return id;
  };
  const deadDataset = await processing('wrk_dead');
  const liveDataset = await processing('wrk_live');

  const requeued: string[] = [];
  const consumer = platform.queue.process(trainingQueue, async ({ jobId }) => {
    requeued.push(jobId);
  });
  const datasetsQueued: string[] = [];
  const datasetConsumer = platform.queue.process(augmentQueue, async ({ processedDatasetId }) => {
    datasetsQueued.push(processedDatasetId);
  });
  // Two processes noticing the same death at once.
  await Promise.all([recoverOrphans(platform), recoverOrphans(platform)]);

  expect(await job(failing)).toMatchObject({ status: 'failed', error: expect.stringMatching(/^the worker wrk_dead stopped/) });
  expect(await job(ghost)).toMatchObject({ status: 'failed', error: expect.stringMatching(/^the worker wrk_never_registered stopped/) });
  expect(await job(resuming)).toMatchObject({ status: 'queued', worker_id: null });
  expect(await job(pausing)).toMatchObject({ status: 'paused', worker_id: null, pause_requested: false });
  expect((await platform.jobs.events(pausing)).at(-1)!.data).toMatchObject({ message: 'paused: the worker wrk_dead stopped while pausing it (no checkpoint stored: a resume starts it over)' });
  expect(await job(alive)).toMatchObject({ status: 'training', worker_id: 'wrk_live' });
  await until(async () => requeued, (ids) => ids.length >= 1);
  await consumer.close();
  expect(requeued).toEqual([resuming]);
  await until(async () => datasetsQueued, (ids) => ids.length >= 1);
  await datasetConsumer.close();
  expect(datasetsQueued).toEqual([deadDataset]);
  expect(await platform.datasets.getForWorker(deadDataset)).toMatchObject({ status: 'processing', worker_id: null, progress: null });
  expect(await platform.datasets.getForWorker(liveDataset)).toMatchObject({ status: 'processing', worker_id: 'wrk_live' });
  expect((await platform.workers.live(3600 * 24)).map((w) => w.worker_id)).toEqual(['wrk_live']);
  expect((await exportRow(cloud)).worker_id).toBeNull();

  // A live worker serving exports takes them: the cloud one finishes, the hub one has no token left.
  worker = await startWorker(platform, { queues: ['export'] });
  const hubRow = await until(() => exportRow(toHub), (r) => r.status !== 'running');
  expect(hubRow).toMatchObject({ status: 'failed', message: HUB_TOKEN_LOST });
  const cloudRow = await until(() => exportRow(cloud), (r) => r.status !== 'running');
  expect(cloudRow.status, cloudRow.message ?? '').toBe('completed');
  const archive = platform.blobs.uri(`${prefix}exports/adapter.tar.gz`);
  expect(cloudRow.artifacts).toEqual([
    { type: 'adapter', variant: 'raw', path: adapterUri },
    { type: 'adapter', variant: 'file', path: archive },
  ]);
  expect(platform.logText()).toContain('export queued again: its worker wrk_dead stopped');
});

it('queues a silent worker’s evaluation again to start over, and fails one that lost a worker on each attempt', async () => {
  await register('wrk_dead_benchmarking', 3600);
  const running = async (attempts: number) => {
    const id = newId('evalrun');
    await platform.evaluationRuns.insert({
      evaluation_id: id, user_id: 'local', job_id: null, model_source: 'base', checkpoint_step: null, base_model_id: 'tiny',
      request: { model_source: 'base', base_model_id: 'tiny', with_base: false, benchmarks: { tasks: ['qa'], apply_chat_template: false } },
    });
    await platform.evaluationRuns.claim(id, 'wrk_dead_benchmarking');
    await platform.db.query('UPDATE evaluation_runs SET attempts = $2 WHERE evaluation_id = $1', [id, attempts]);
    return id;
  };
  const again = await running(1);
  const spent = await running(MAX_EVALUATION_ATTEMPTS);
  const queued: string[] = [];
  const consumer = platform.queue.process(benchmarkQueue, async ({ evaluationId }) => {
    queued.push(evaluationId);
  });
  await Promise.all([recoverOrphans(platform), recoverOrphans(platform)]);

  expect(await platform.evaluationRuns.getForWorker(again)).toMatchObject({ status: 'queued', worker_id: null, attempts: 1 });
  expect((await platform.evaluationRuns.events(again)).map((e) => e.data.status ?? e.data.message)).toEqual([
    'queued', 'running', 'queued', `queued again to start over: the worker wrk_dead_benchmarking stopped (attempt 1 of ${MAX_EVALUATION_ATTEMPTS})`,
  ]);
  expect(await platform.evaluationRuns.getForWorker(spent)).toMatchObject({
    status: 'failed', error: expect.stringMatching(/^the worker wrk_dead_benchmarking stopped while this evaluation ran, and so did a worker on each of its 3 attempts/),
  });
  await until(async () => queued, (ids) => ids.length >= 1);
  await consumer.close();
  expect(queued).toEqual([again]);
});

it('fails a Tinker run a silent worker held, and every call it left, saying the weights since its last save are lost', async () => {
  await register('wrk_tinker_dead', 3600);
  await register('wrk_tinker_live');
  const session = await platform.tinker.createSession('local', {});
  const held = async (n: number, workerId: string) => {
    const runId = newId('job');
    const { run } = await platform.tinker.createRun(
      { run_id: runId, model_id: `${session.session_id}:train:${n}`, session_id: session.session_id, user_id: 'local', base_model: 'tiny', config: { rank: 8, train_mlp: true, train_attn: true, train_unembed: true, seed: 0 }, blob_prefix: `tinker/local/${runId}/` },
      { op: 'create_model', request: {} },
    );
    await platform.tinker.updateRun(run.run_id, { status: 'running', worker_id: workerId, step: 7 }, ['queued']);
    return platform.tinker.submit({ user_id: 'local', run_id: run.run_id, target_id: run.model_id, seq_id: 1, op: 'optim_step', request: {} });
  };
  const lost = await held(0, 'wrk_tinker_dead');
  const kept = await held(1, 'wrk_tinker_live');
  // Two processes notice at once: the run is failed once.
  await Promise.all([recoverOrphans(platform), recoverOrphans(platform)]);
  const run = (await platform.tinker.getRunForWorker(lost.run_id!))!;
  expect(run).toMatchObject({ status: 'failed', error: expect.stringMatching(/worker wrk_tinker_dead stopped holding this training run at step 7; the weights since its last save are lost: load a saved state/) });
  expect(await platform.tinker.getCall('local', lost.request_id)).toMatchObject({ status: 'failed', error: { category: 'server', error: run.error } });
  expect((await platform.tinker.getRunForWorker(kept.run_id!))!.status).toBe('running');
  expect((await platform.tinker.getCall('local', kept.request_id))!.status).toBe('queued');
});
