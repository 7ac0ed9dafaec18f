// GET /jobs/{id}/events: the job's event log as server-sent events (status changes, progress, metrics, each with
// the time it was recorded), followed live until the job ends; the last event, `end`, carries the final job status.
// The log is rows in the database, so this works whichever process or machine the job runs on.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RUNNING_STATUSES, type Platform, type TrainingJobRow } from '@ftp/platform';
import { presentJob } from '@ftp/jobs/training';

const POLL_MS = 500;
/** A comment this often when nothing else is sent, so proxies and clients with idle timeouts keep the stream. */
const HEARTBEAT_MS = 15_000;

function send(res: ServerResponse, event: string, data: unknown, id?: number): void {
  res.write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

export async function streamJobEvents(platform: Platform, job: TrainingJobRow, req: IncomingMessage, res: ServerResponse): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  let closed = false;
  req.on('close', () => (closed = true));
  // A reconnecting client says where it stopped.
  let lastSeq = Number(req.headers['last-event-id'] ?? 0) || 0;
  let lastWrite = Date.now();
  while (!closed) {
    const current = await platform.jobs.getForWorker(job.job_id);
    for (const event of await platform.jobs.events(job.job_id, lastSeq)) {
      send(res, event.kind, { ...event.data, created_at: new Date(event.created_at).toISOString() }, event.seq);
      lastSeq = event.seq;
      lastWrite = Date.now();
    }
    if (Date.now() - lastWrite >= HEARTBEAT_MS) {
      res.write(': keep-alive\n\n');
      lastWrite = Date.now();
    }
    if (!current || !RUNNING_STATUSES.includes(current.status)) {
      const latestExport = current ? await platform.exports.latestForJob(current.user_id, current.job_id) : undefined;
      send(res, 'end', current ? presentJob(current, latestExport) : { job_id: job.job_id, deleted: true });
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  res.end();
}
