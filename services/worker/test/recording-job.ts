// A job claimed by worker w1 (status preparing) and the recorder its training would feed the core's events to: what
// the recorder tests share. No training, no worker process.
import { newId } from '@ftp/platform';
import type { TestPlatform } from '@ftp/platform/testing';
import { recordTraining, type TrainingRecord } from '../src/training/core-events.ts';
import type { JobContext } from '../src/training/job-context.ts';

export async function recordingJob(platform: TestPlatform, name: string): Promise<{ jobId: string; record: TrainingRecord }> {
  const jobId = newId('job');
  await platform.jobs.insert({
    job_id: jobId, user_id: 'local', job_name: name, processed_dataset_id: 'pd_1', base_model_id: 'tiny', modality: 'text',
    training_config: { trainer_type: 'sft' }, blob_prefix: `jobs/local/${jobId}/`, tracker_url: null,
  });
  const job = (await platform.jobs.update(jobId, { status: 'preparing', worker_id: 'w1' }, ['queued']))!;
  const ctx: JobContext = { platform, workerId: 'w1', machine: { host: 'test', device: 'cpu' }, trainProcesses: 1, signal: new AbortController().signal };
  return { jobId, record: recordTraining(ctx, job) };
}
