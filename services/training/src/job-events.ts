// GET /jobs/{id}/events: the job's event log as server-sent events (status changes, progress, metrics, each with
// the time it was recorded), followed live until the job ends; the last event, `end`, carries the final job status.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RUNNING_STATUSES, streamEventLog, type Platform, type TrainingJobRow } from '@ftp/platform';
import { presentJob } from '@ftp/jobs/training';

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
