// The model of a completed job is prepared for the fast engine in the background: its reads and writes wait out a
// database outage like every other write a worker makes after training, and the job's history gets one event with the
// outcome (#40: a PostgreSQL outage then left neither "ready" nor "failed" in the history). One preparation at a time,
// in the order the jobs completed, a deleted job skipped, shown in GET /workers (#56: a soak's worker held 6 at once).
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, ServiceUnavailable, withOutageRetries, type Database } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import type { WorkerInfo, WorkerList } from '@ftp/schema';
import { BackgroundPreparation } from '../src/inference/prepare-after-training.ts';
import { jobWorkDir } from '../src/models/job-models.ts';
import { loraRequest, qaCsv, startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await openTestPlatform({ OUTAGE_RETRY_S: '60' });
});
afterAll(() => platform?.close());

/** `db` that is down (the driver's ServiceUnavailable) for its next `calls` queries, then up. */
function downFor(db: Database, calls: number): Database & { failed: () => number } {
  let failed = 0;
  const down = () => (failed < calls ? ((failed += 1), true) : false);
  return {
    query: (sql, params) => (down() ? Promise.reject(new ServiceUnavailable('database', 'connect ECONNREFUSED 127.0.0.1:5432')) : db.query(sql, params)),
    transaction: (fn) => (down() ? Promise.reject(new ServiceUnavailable('database', 'connect ECONNREFUSED 127.0.0.1:5432')) : db.transaction(fn)),
    check: () => db.check(),
    close: () => db.close(),
    failed: () => failed,
  };
}

it('reads the job and writes its outcome through a database outage: one event saying the preparation failed', async () => {
  const jobId = newId('job');
  await platform.jobs.insert({
    job_id: jobId, user_id: 'local', job_name: 'prepared', processed_dataset_id: 'pd_x', base_model_id: 'tiny', modality: 'text',
    training_config: { method: 'LoRA', provider: 'local', base_model_id: 'tiny' }, blob_prefix: `jobs/local/${jobId}/`, tracker_url: null,
  });
  // Completed, its adapter named but not stored: the conversion fails, and that is the outcome to record.
  const adapter = platform.blobs.uri(`jobs/local/${jobId}/adapter`);
  await platform.jobs.update(jobId, { status: 'completed', adapter_path: adapter, artifacts: { file: {}, raw: { adapter }, hub: {} } });
  const db = downFor(platform.db, 3);
  const work = withOutageRetries({ ...platform, db });
  const preparation = new BackgroundPreparation(work, { host: 'test-host', device: 'cpu:test' });
  preparation.afterTraining(jobId);
  await preparation.idle();
  expect(db.failed()).toBe(3);
  const outcome = (await platform.jobs.events(jobId)).filter((e) => e.data['about'] === 'model' && /^(the model is ready for chat|preparing the model for the fast engine)/.test(String(e.data['message'])));
  expect(outcome).toHaveLength(1);
  expect(outcome[0]!.data).toMatchObject({ level: 'warning', message: expect.stringMatching(/^preparing the model for the fast engine failed: .+; the first chat will try again$/) });
});

describe('five completed jobs asking within a second', () => {
  let h: TrainingHarness;
  const readyEvents = async (jobId: string) => (await h.platform.jobs.events(jobId)).filter((e) => /^the model is ready for chat/.test(String(e.data['message'])));
  beforeAll(async () => {
    h = await startTrainingHarness({ PREPARE_GGUF_AFTER_TRAINING: 'true' });
  });
  afterAll(() => h?.close());

  it('are prepared one at a time in the order they completed, a deleted one skipped, each shown in GET /workers', async () => {
    const trained = await h.train({ method: 'POST', url: '/train', payload: loraRequest(await h.dataset(qaCsv()), { max_steps: 4 }) });
    expect(trained.statusCode).toBe(200);
    const first: string = trained.json().job_id;
    await h.waitFor(first, (j) => j['status'] === 'completed');
    const preparation = h.worker!.preparation!;
    // The worker's own preparation of the trained job (the base's GGUF, cached from then on), done.
    for (let tries = 0; !(await readyEvents(first)).length; tries++) {
      expect(tries).toBeLessThan(600);
      await new Promise((r) => setTimeout(r, 200));
    }
    await preparation.idle();
    // Four more completed jobs of the same adapter (their rows as the trained one's), and one deleted while it waits.
    const row = (await h.platform.jobs.getForWorker(first))!;
    const ids = Array.from({ length: 5 }, () => newId('job'));
    for (const id of ids) {
      await h.platform.jobs.insert({ ...row, job_id: id });
      await h.platform.jobs.update(id, { status: 'completed', adapter_path: row.adapter_path, artifacts: row.artifacts });
    }
    const seen: Array<WorkerInfo['preparing']> = [];
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const list = (await h.train({ url: '/workers' })).json() as WorkerList;
        seen.push(list.workers.find((w) => w.worker_id === h.worker!.workerId)!.preparing);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    for (const id of ids) preparation.afterTraining(id);
    expect(preparation.state()).toEqual({ job_id: ids[0], waiting: ids.slice(1) });
    expect(await h.platform.jobs.delete(row.user_id, ids[2]!)).toBe(true);
    await preparation.idle();
    watching = false;
    await watch;

    expect(preparation.mostAtOnce).toBe(1);
    const prepared = ids.filter((_, i) => i !== 2);
    const readyAt: number[] = [];
    for (const id of prepared) {
      const ready = await readyEvents(id);
      expect(ready, id).toHaveLength(1);
      readyAt.push(ready[0]!.created_at.getTime());
      await fs.access(path.join(jobWorkDir(h.platform, id), 'models', 'gguf-lora', 'adapter.gguf'));
    }
    expect(readyAt).toEqual([...readyAt].sort((a, b) => a - b)); // ready in the order they completed
    await expect(fs.access(path.join(jobWorkDir(h.platform, ids[2]!), 'models', 'gguf-lora'))).rejects.toThrow();
    // GET /workers told it: the one converting now, the rest waiting in order, never two at once.
    const busy = seen.filter((s) => typeof s.job_id === 'string' && ids.includes(s.job_id));
    expect(busy.length).toBeGreaterThan(0);
    for (const state of busy) {
      const at = ids.indexOf(state.job_id!);
      expect(state.waiting).toEqual(ids.slice(at + 1).filter((id) => state.waiting.includes(id)));
      expect(state.waiting.every((id) => ids.indexOf(id) > at)).toBe(true);
    }
    // And once all are done, the next heartbeat says nothing is being prepared.
    for (let tries = 0; ; tries++) {
      const list = (await h.train({ url: '/workers' })).json() as WorkerList;
      const now = list.workers.find((w) => w.worker_id === h.worker!.workerId)!.preparing;
      if (now.job_id === null) {
        expect(now).toEqual({ job_id: null, waiting: [] });
        break;
      }
      expect(tries).toBeLessThan(50);
      await new Promise((r) => setTimeout(r, 200));
    }
    // A job trained, the base model converted and six adapters: past vitest's 60 s on two CPUs shared with the suite.
  }, 240_000);
});
