// Ending a training job, for both faces. Cancel (POST /jobs/{id}/cancel, POST /v1/fine_tuning/jobs/{id}/cancel): the
// flag is set and the time recorded; a queued job ends here (a worker that takes it later finds it failed and skips
// it), a running one is stopped by its worker, which watches the flag wherever it runs. Delete (DELETE /jobs/{id},
// DELETE /v1/models/{ft model}): the row, its secrets, evaluations and every stored file.
import { Conflict, RUNNING_STATUSES, type Platform, type TrainingJobRow } from '@ftp/platform';
import { CANCELLED_BY_USER } from './messages.ts';

export async function cancelTrainingJob(platform: Platform, userId: string, jobId: string): Promise<void> {
  const job: TrainingJobRow = await platform.jobs.getOwn(userId, jobId);
  if (!RUNNING_STATUSES.includes(job.status)) throw new Conflict(`job ${job.job_id} is already ${job.status}; only queued, preparing or training jobs can be cancelled`);
  await platform.jobs.requestCancel(userId, job.job_id);
  const now = new Date();
  if (await platform.jobs.update(job.job_id, { status: 'failed', error: CANCELLED_BY_USER, finished_at: now, cancelled_at: now }, ['queued'])) {
    await platform.secrets.drop(job.job_id);
  }
}

/** Deletes a job that is not running and everything it stored; returns what went (blob keys, evaluation ids). */
export async function deleteTrainingJob(platform: Platform, userId: string, jobId: string): Promise<{ job: TrainingJobRow; blobs: string[]; evaluations: string[] }> {
  const job = await platform.jobs.getOwn(userId, jobId);
  if (RUNNING_STATUSES.includes(job.status)) {
    throw new Conflict(`job ${job.job_id} is ${job.status}; cancel it first (POST /jobs/${job.job_id}/cancel)`);
  }
  if (await platform.exports.anyRunning(job.job_id)) {
    throw new Conflict(`an export of job ${job.job_id} is running; delete the job once it has finished (GET /exports/${job.job_id})`);
  }
  await platform.jobs.delete(userId, job.job_id);
  await platform.secrets.drop(job.job_id);
  const evaluations = await platform.evaluations.deleteFor(userId, { jobId: job.job_id });
  const blobs = await platform.blobs.deletePrefix(job.blob_prefix);
  return { job, blobs, evaluations };
}
