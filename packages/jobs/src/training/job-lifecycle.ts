// Ending a training job, for both faces. Cancel (POST /jobs/{id}/cancel, POST /v1/fine_tuning/jobs/{id}/cancel): the
// flag is set and the time recorded; a queued job ends here (a worker that takes it later finds it failed and skips
// it), a running one is stopped by its worker, which watches the flag wherever it runs. Delete (DELETE /jobs/{id},
// DELETE /v1/models/{ft model}): the row, its secrets, evaluations (both kinds) and every stored file. Pause (POST /jobs/{id}/pause,
// POST /v1/fine_tuning/jobs/{id}/pause): a queued job is paused here and stays out of the queue; a running one is
// flagged, and its worker has the core checkpoint at its next step, stores the checkpoint and leaves the job paused.
// Resume queues a paused job again; whichever worker takes it continues from its last stored checkpoint, with the
// same step count, data order and learning-rate schedule.
import { Conflict, RUNNING_STATUSES, type JobStatus, type Platform, type TrainingJobRow } from '@ftp/platform';
import { CANCELLED_BY_USER, trainingQueue } from '../queues/index.ts';

/** Statuses a user's cancel ends: running ones and a paused job (each still needs its dataset). */
export const CANCELLABLE_STATUSES: readonly JobStatus[] = [...RUNNING_STATUSES, 'paused'];

export async function cancelTrainingJob(platform: Platform, userId: string, jobId: string): Promise<void> {
  const job: TrainingJobRow = await platform.jobs.getOwn(userId, jobId);
  if (!CANCELLABLE_STATUSES.includes(job.status)) throw new Conflict(`job ${job.job_id} is already ${job.status}; only queued, preparing, training or paused jobs can be cancelled`);
  await platform.jobs.requestCancel(userId, job.job_id);
  const now = new Date();
  if (await platform.jobs.update(job.job_id, { status: 'failed', error: CANCELLED_BY_USER, finished_at: now, cancelled_at: now }, ['queued', 'paused'])) {
    await platform.secrets.drop(job.job_id);
  }
}

/** Pauses a queued job at once, or asks a running one's worker to (it checkpoints first). Returns the job as it is
 *  now: paused, or still running until its worker has stopped it. */
export async function pauseTrainingJob(platform: Platform, userId: string, jobId: string): Promise<TrainingJobRow> {
  const job = await platform.jobs.getOwn(userId, jobId);
  if (!RUNNING_STATUSES.includes(job.status)) throw new Conflict(`job ${job.job_id} is ${job.status}; only queued, preparing or training jobs can be paused`);
  const paused = await platform.jobs.update(job.job_id, { status: 'paused' }, ['queued']);
  if (paused) {
    await platform.jobs.appendEvent(job.job_id, 'log', { level: 'info', message: 'paused by the user before it started; resume it to queue it again' });
    return paused;
  }
  const flagged = await platform.jobs.requestPause(userId, job.job_id);
  if (flagged) return flagged;
  // It moved on meanwhile (a worker took it from the queue, or it ended): say what it is now.
  const now = await platform.jobs.getOwn(userId, jobId);
  if (RUNNING_STATUSES.includes(now.status)) return pauseTrainingJob(platform, userId, jobId);
  throw new Conflict(`job ${job.job_id} is ${now.status}; only queued, preparing or training jobs can be paused`);
}

/** Queues a paused job again; the worker that takes it continues from its last stored checkpoint. */
export async function resumeTrainingJob(platform: Platform, userId: string, jobId: string): Promise<TrainingJobRow> {
  const job = await platform.jobs.getOwn(userId, jobId);
  const resumed = job.status === 'paused'
    ? await platform.jobs.update(job.job_id, { status: 'queued', worker_id: null, pause_requested: false }, ['paused'])
    : undefined;
  if (!resumed) throw new Conflict(`job ${job.job_id} is ${(await platform.jobs.getOwn(userId, jobId)).status}; only a paused job can be resumed`);
  const checkpoint = await platform.jobs.lastCheckpointStep(job.job_id);
  await platform.jobs.appendEvent(job.job_id, 'log', {
    level: 'info',
    message: `resumed by the user: queued to continue from ${checkpoint === undefined ? 'the start (no checkpoint was stored)' : `checkpoint step ${checkpoint}`}`,
  });
  await platform.queue.add(trainingQueue, { jobId: job.job_id });
  return resumed;
}

/** Deletes a job that is not running and everything it stored; returns what went (blob keys, evaluation ids). */
export async function deleteTrainingJob(platform: Platform, userId: string, jobId: string): Promise<{ job: TrainingJobRow; blobs: string[]; evaluations: string[]; comparisons: string[] }> {
  const job = await platform.jobs.getOwn(userId, jobId);
  if (RUNNING_STATUSES.includes(job.status)) {
    throw new Conflict(`job ${job.job_id} is ${job.status}; cancel it first (POST /jobs/${job.job_id}/cancel)`);
  }
  await refuseWhileModelsInUse(platform, userId, job.job_id, `job ${job.job_id}`);
  const { evaluations, comparisons } = await deleteModelResults(platform, userId, job.job_id, () => platform.jobs.delete(userId, job.job_id));
  await platform.secrets.drop(job.job_id);
  const blobs = await platform.blobs.deletePrefix(job.blob_prefix);
  return { job, blobs, evaluations, comparisons };
}

/** 409 while an export or an evaluation with benchmarks of the models of `id` (a job, or a Tinker run) runs. */
export async function refuseWhileModelsInUse(platform: Platform, userId: string, id: string, what: string): Promise<void> {
  if (await platform.exports.anyRunning(id)) {
    throw new Conflict(`an export of ${what} is running; delete it once the export has finished (GET /exports/${id})`);
  }
  const benchmarking = (await platform.evaluationRuns.listUnfinishedOfJob(userId, id)).map((e) => e.evaluation_id);
  if (benchmarking.length > 0) {
    throw new Conflict(`evaluation ${benchmarking.join(', ')} of ${what} is queued or running; cancel it (POST /evaluations/{id}/cancel) or delete it once that has finished`);
  }
}

/** Deletes what was measured of the models of `id` (a job, or a Tinker run): its evaluations with benchmarks first,
 *  any user's (a shared checkpoint's: their model is going), then the row itself (`deleteRow`), then its synchronous
 *  evaluations and comparisons. */
export async function deleteModelResults(platform: Platform, userId: string, id: string, deleteRow: () => Promise<unknown>): Promise<{ evaluations: string[]; comparisons: string[] }> {
  const runs = await platform.evaluationRuns.deleteOfJob(userId, id);
  await deleteRow();
  const evaluations = [...(await platform.evaluations.deleteFor(userId, { jobId: id })), ...runs];
  const comparisons = await platform.comparisons.deleteFor(userId, { jobId: id });
  return { evaluations, comparisons };
}
