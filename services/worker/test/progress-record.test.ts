// The progress a worker records from the core's events (#56): a core from before the fix, resumed from the last step of
// its run, reported step 51 of 50 with eta -0.1; the row gets a total that counts every step run and an ETA of 0, the
// values GET /jobs serves. No training: the events are fed to the recorder as the core would send them.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { newId } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { recordTraining } from '../src/training/core-events.ts';
import type { JobContext } from '../src/training/job-context.ts';

let platform: TestPlatform;
beforeEach(async () => {
  platform = await openTestPlatform();
});
afterEach(() => platform.close());

it('records a step past the total with the total raised to it and a negative ETA as 0', async () => {
  const jobId = newId('job');
  await platform.jobs.insert({
    job_id: jobId, user_id: 'local', job_name: 'resumed', processed_dataset_id: 'pd_1', base_model_id: 'tiny', modality: 'text',
    training_config: { trainer_type: 'sft' }, blob_prefix: `jobs/local/${jobId}/`, tracker_url: null,
  });
  const job = (await platform.jobs.update(jobId, { status: 'preparing', worker_id: 'w1' }, ['queued']))!;
  const ctx: JobContext = { platform, workerId: 'w1', machine: { host: 'test', device: 'cpu' }, trainProcesses: 1, signal: new AbortController().signal };
  const record = recordTraining(ctx, job);
  await record.onEvent({ event: 'progress', step: 51, total_steps: 50, epoch: 1.02, loss: 0.1, learning_rate: null, tokens_per_second: null, eta_seconds: -0.1, extra: {} });
  const row = (await platform.jobs.get('local', jobId))!;
  expect(row.status).toBe('training');
  expect(row.progress).toMatchObject({ step: 51, total_steps: 51, loss: 0.1, eta_seconds: 0 });
  // the event log (GET /jobs/{id}/events, /v1 events) says the same
  const logged = (await platform.jobs.events(jobId)).find((e) => e.kind === 'progress');
  expect(logged?.data).toMatchObject({ step: 51, total_steps: 51, eta_seconds: 0 });
});
