// The progress a worker records from the core's events (#56): a core from before the fix, resumed from the last step of
// its run, reported step 51 of 50 with eta -0.1; the row gets a total that counts every step run and an ETA of 0, the
// values GET /jobs serves. No training: the events are fed to the recorder as the core would send them.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { recordingJob } from './recording-job.ts';

let platform: TestPlatform;
beforeEach(async () => {
  platform = await openTestPlatform();
});
afterEach(() => platform.close());

it('records a step past the total with the total raised to it and a negative ETA as 0', async () => {
  const { jobId, record } = await recordingJob(platform, 'resumed');
  await record.onEvent({ event: 'progress', step: 51, total_steps: 50, epoch: 1.02, loss: 0.1, learning_rate: null, tokens_per_second: null, eta_seconds: -0.1, extra: {} });
  const row = (await platform.jobs.get('local', jobId))!;
  expect(row.status).toBe('training');
  expect(row.progress).toMatchObject({ step: 51, total_steps: 51, loss: 0.1, eta_seconds: 0 });
  // the event log (GET /jobs/{id}/events, /v1 events) says the same
  const logged = (await platform.jobs.events(jobId)).find((e) => e.kind === 'progress');
  expect(logged?.data).toMatchObject({ step: 51, total_steps: 51, eta_seconds: 0 });
});
