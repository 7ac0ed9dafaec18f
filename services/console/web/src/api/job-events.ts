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


/** Until `signal` aborts: each `log` message the job's log gets from now on, as it comes (read again every
 *  `everyMs`: a finished job's stream replays what is new and ends). The Evaluation page shows what an evaluation
 *  waits for while it waits, which the worker tells the job's log: a cold model loading (#39). Best effort: a read that
 *  fails is tried again at the next turn; the request's own answer is what counts. */
export async function watchJobLog(jobId: string, signal: AbortSignal, onMessage: (message: string) => void, everyMs = 2_000): Promise<void> {
  let lastId: string | undefined;
  let replayed = false; // the log as it was when the watch began is not news
  while (!signal.aborted) {
    const turn = new AbortController();
    const stop = () => turn.abort();
    signal.addEventListener('abort', stop);
    const cut = setTimeout(stop, 2 * everyMs); // a running job's stream does not end
    try {
      const events = serverSentEvents('training', `/jobs/${encodeURIComponent(jobId)}/events`, { signal: turn.signal, headers: lastId ? { 'last-event-id': lastId } : {} });
      for await (const message of events) {
        if (message.event === 'end') break;
        if (message.id) lastId = message.id;
        const text = message.event === 'log' ? (JSON.parse(message.data) as { message?: string }).message : undefined;
        if (replayed && text !== undefined) onMessage(text);
      }
      replayed = true;
    } catch {
      // read again at the next turn
    } finally {
      clearTimeout(cut);
      signal.removeEventListener('abort', stop);
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
