// GET /jobs/{id}/events: the job's event log as server-sent events (status changes, progress, metrics, each with
// the time it was recorded), followed live until the job ends; the last event, `end`, carries the final job status.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RUNNING_STATUSES, streamEventLog, type Platform, type TinkerRunRow, type TrainingJobRow } from '@ftp/platform';
import { presentJob } from '@ftp/jobs/training';
import { presentTinkerRun } from '@ftp/jobs/tinker';

export async function streamJobEvents(platform: Platform, job: TrainingJobRow, req: IncomingMessage, res: ServerResponse): Promise<void> {
  await streamEventLog<TrainingJobRow>({
    events: (afterSeq) => platform.jobs.events(job.job_id, afterSeq),
    current: () => platform.jobs.getForWorker(job.job_id),
    running: (current) => RUNNING_STATUSES.includes(current.status),
    end: async (current) => {
      if (!current) return { job_id: job.job_id, deleted: true };
      return presentJob(current, await platform.exports.latestForJob(current.user_id, current.job_id));
    },
  }, req, res);
}

/** A Tinker run's stream: it keeps no event log (its calls are its history, the SDK's to read), so only `end`, once
 *  no worker holds it or will (idle, failed, or deleted). */
export async function streamTinkerRunEvents(platform: Platform, run: TinkerRunRow, req: IncomingMessage, res: ServerResponse): Promise<void> {
  await streamEventLog<TinkerRunRow>({
    events: async () => [],
    current: () => platform.tinker.getRunForWorker(run.run_id),
    running: (current) => current.status === 'queued' || current.status === 'running',
    end: (current) => (current ? presentTinkerRun(current) : { job_id: run.run_id, deleted: true }),
  }, req, res);
}
