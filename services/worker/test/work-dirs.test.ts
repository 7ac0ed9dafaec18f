// A worker's sweep of DATA_DIR/work: the folder of a job that is gone goes whole; a job that ended, or runs on another
// worker now, loses its training files and keeps its model cache; a queued job's folder and the job at work stay;
// a folder another live worker owns (workers sharing DATA_DIR on one machine) is left alone. An evaluation's scratch
// folder left by a worker that died goes, unless the evaluation runs on another live worker or this one.
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId, type JobStatus } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { ownWorkDir, sweepWorkDirs } from '../src/work-dirs.ts';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await openTestPlatform();
});
afterAll(async () => {
  await platform.close();
});

const folder = (jobId: string) => path.join(platform.dataDir, 'work', jobId);

/** A job in `status` on `workerId`, with a work folder trained in by `owner`: run files and a model cache. */
async function jobWithFolder(status: JobStatus, workerId: string | null, owner: string): Promise<string> {
  const jobId = newId('job');
  await platform.jobs.insert({
    job_id: jobId, user_id: 'local', job_name: 'w', processed_dataset_id: 'pd_x', base_model_id: 'tiny', modality: 'text',
    training_config: {}, blob_prefix: `jobs/local/${jobId}/`, tracker_url: null,
  });
  if (status !== 'queued') await platform.jobs.update(jobId, { status, worker_id: workerId }, ['queued']);
  await ownWorkDir(folder(jobId), owner);
  for (const file of ['run/checkpoints/checkpoint-5/adapter.bin', 'data/train.jsonl', 'models/adapter/adapter.bin']) {
    await fs.mkdir(path.dirname(path.join(folder(jobId), file)), { recursive: true });
    await fs.writeFile(path.join(folder(jobId), file), 'x');
  }
  return jobId;
}

const contents = async (jobId: string) => (await fs.readdir(folder(jobId)).catch(() => [])).sort();

it('keeps what a job still needs and what another live worker owns, and removes the rest', async () => {
  const me = 'wrk_me';
  await platform.workers.register({ worker_id: 'wrk_other', host: 'test', pid: 1, devices: [], queues: ['train'] });
  const completed = await jobWithFolder('completed', me, me);
  const movedAway = await jobWithFolder('training', 'wrk_elsewhere', me); // taken over by a worker on another machine
  const neighbours = await jobWithFolder('training', 'wrk_other', 'wrk_other'); // a live worker sharing this DATA_DIR
  const queued = await jobWithFolder('queued', null, me);
  const atWork = await jobWithFolder('training', me, me);
  const gone = newId('job');
  await fs.mkdir(path.join(folder(gone), 'run'), { recursive: true });

  const swept = await sweepWorkDirs(platform, me, new Set([atWork]));

  expect(swept.sort()).toEqual([completed, gone, movedAway].sort());
  expect(await contents(completed)).toEqual(['models']);
  expect(await contents(movedAway)).toEqual(['models']);
  expect(await contents(gone)).toEqual([]);
  for (const kept of [neighbours, queued, atWork]) expect(await contents(kept)).toEqual(['.worker', 'data', 'models', 'run']);
});

it('removes the scratch folders of evaluations no live worker runs', async () => {
  const me = 'wrk_me_evaluating';
  await platform.workers.register({ worker_id: 'wrk_other_evaluating', host: 'test', pid: 1, devices: [], queues: ['benchmark'] });
  const evaluation = async (workerId: string | null) => {
    const id = newId('evalrun');
    await platform.evaluationRuns.insert({
      evaluation_id: id, user_id: 'local', job_id: null, model_source: 'base', checkpoint_step: null, base_model_id: 'tiny',
      request: { model_source: 'base', base_model_id: 'tiny', with_base: false, benchmarks: { tasks: ['qa'], apply_chat_template: false } },
    });
    if (workerId) await platform.evaluationRuns.claim(id, workerId);
    await fs.mkdir(folder(id), { recursive: true });
    await fs.writeFile(path.join(folder(id), 'model-spec.json'), '{}');
    return id;
  };
  const left = await evaluation('wrk_dead_evaluating');
  const elsewhere = await evaluation('wrk_other_evaluating');
  const mine = await evaluation(me);

  const swept = await sweepWorkDirs(platform, me, new Set([mine]));

  expect(swept.filter((name) => name.startsWith('evalrun_'))).toEqual([left]); // (the first test's jobs are swept too)
  expect(await contents(left)).toEqual([]);
  for (const kept of [elsewhere, mine]) expect(await contents(kept)).toEqual(['model-spec.json']);
});

it('removes the hold folders of Tinker runs no live worker holds, and the weights caches of deleted runs', async () => {
  const me = 'wrk_me_holding';
  await platform.workers.register({ worker_id: 'wrk_other_holding', host: 'test', pid: 1, devices: [], queues: ['session'] });
  const run = async (workerId: string | null) => {
    const runId = newId('job');
    const config = { rank: 4, train_mlp: true, train_attn: true, train_unembed: true, seed: 0 };
    await platform.tinker.createRun({ run_id: runId, model_id: `s:train:${runId}`, session_id: 's', user_id: 'local', base_model: 'tiny', config, blob_prefix: `tinker/local/${runId}/` }, { op: 'create_model', request: {} });
    if (workerId) await platform.tinker.updateRun(runId, { status: 'running', worker_id: workerId });
    for (const dir of [path.join(platform.dataDir, 'work', 'tinker', `${runId}-0a1b2c3d`), path.join(platform.dataDir, 'cache', 'tinker', runId, 'final-1')]) {
      await fs.mkdir(dir, { recursive: true });
      await fs.writeFile(path.join(dir, 'adapter.bin'), 'x');
    }
    return runId;
  };
  const deadHolder = await run('wrk_dead_holding');
  const idle = await run(null);
  const elsewhere = await run('wrk_other_holding');
  const mine = await run(me);
  const deleted = await run(null);
  await platform.tinker.deleteRun('local', deleted);

  const swept = await sweepWorkDirs(platform, me, new Set());

  const tinker = (where: 'work' | 'cache') => fs.readdir(path.join(platform.dataDir, where, 'tinker')).then((names) => names.sort());
  expect(await tinker('work')).toEqual([elsewhere, mine].map((id) => `${id}-0a1b2c3d`).sort());
  expect(await tinker('cache')).toEqual([deadHolder, idle, elsewhere, mine].sort()); // the runs' saved weights stay usable
  expect(swept.filter((name) => name.startsWith('tinker/')).sort()).toEqual([`tinker/${deadHolder}-0a1b2c3d`, `tinker/${idle}-0a1b2c3d`, `tinker/${deleted}-0a1b2c3d`, `tinker/${deleted}`].sort());
});
