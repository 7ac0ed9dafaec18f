// The model of a completed job is prepared for the fast engine in the background: its reads and writes wait out a
// database outage like every other write a worker makes after training, and the job's history gets one event with the
// outcome (#40: a PostgreSQL outage then left neither "ready" nor "failed" in the history).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId, ServiceUnavailable, withOutageRetries, type Database } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { BackgroundPreparation } from '../src/inference/prepare-after-training.ts';

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
