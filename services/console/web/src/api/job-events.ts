// A training job's history and live progress from GET /jobs/{id}/events (server-sent events), read into a JobHistory
// (job-history.ts). A dropped connection is resumed where it stopped (Last-Event-ID); the stream ends by itself once
// the job has.
import { serverSentEvents } from './client.ts';
import { emptyHistory, recordEvent, type JobHistory } from './job-history.ts';

const FLUSH_MS = 250;

/** Follows a job's events until it ends or `signal` aborts, calling `onUpdate` with the history so far (at most every
 *  FLUSH_MS, so replaying thousands of old events renders a few times, not thousands). */
export async function followJobEvents(jobId: string, signal: AbortSignal, onUpdate: (history: JobHistory) => void): Promise<void> {
  const history = emptyHistory();
  let lastId: string | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const publish = () => {
    timer = undefined;
    onUpdate({ ...history, progress: [...history.progress], evals: [...history.evals], log: [...history.log] });
  };
  const schedule = () => (timer ??= setTimeout(publish, FLUSH_MS));
  while (!signal.aborted && !history.final) {
    try {
      const events = serverSentEvents('training', `/jobs/${encodeURIComponent(jobId)}/events`, { signal, headers: lastId ? { 'last-event-id': lastId } : {} });
      for await (const message of events) {
        if (message.id) lastId = message.id;
        recordEvent(history, message.event ?? 'message', JSON.parse(message.data) as Record<string, unknown>, message.id);
        schedule();
      }
    } catch (err) {
      if (signal.aborted) break;
      // A 404 (deleted) or 401 is final; a dropped connection is tried again.
      if ((err as { status?: number }).status) throw err;
    }
    if (!history.final && !signal.aborted) await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  if (timer) clearTimeout(timer);
  if (!signal.aborted) publish();
}

