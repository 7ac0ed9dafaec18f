// GET /jobs/{id}/events: the training service's server-sent events of a job. It replays the job's event log
// (`status`, `progress`, `metrics`, `log`, each with its sequence number as `id`), follows it while the job runs,
// and ends with `end`, whose data is the final job (as GET /jobs/{id} shows it). A stream that breaks before `end`
// (a restart of the service, an idle timeout) is picked up again where it stopped, with Last-Event-ID. An evaluation's
// log (GET /evaluations/{id}/events, the inference service) streams the same way.
import type { JobProgress, TrainingJob } from '@ftp/schema';
import { ApiError, CliError } from './errors.ts';
import { segment, type Api } from './http.ts';
import type { Service } from './config.ts';
import { parseSse } from './sse.ts';

export type JobEvent =
  | { id?: string; event: 'status'; data: { status: string; error?: string } }
  | { id?: string; event: 'progress'; data: JobProgress & { learning_rate?: number | null; tokens_per_second?: number | null } }
  | { id?: string; event: 'metrics'; data: { step?: number } & Record<string, unknown> }
  | { id?: string; event: 'log'; data: { level?: string; message?: string } }
  | { id?: string; event: 'end'; data: TrainingJob | { job_id: string; deleted: true } }
  | { id?: string; event: string; data: unknown };

const MAX_RECONNECTS = 10;

/** A resource's event log stream: where it is, and what it is called in messages (`job`, `job_…`). */
export interface EventLogSource {
  service: Service;
  path: string;
  kind: string;
  id: string;
}

/** The job's events until `end` (included). Throws the API's sentence for an unknown job, and after
 *  MAX_RECONNECTS broken streams in a row. */
export function jobEvents(api: Api, jobId: string): AsyncGenerator<JobEvent> {
  return logEvents(api, { service: 'training', path: `/jobs/${segment(jobId)}/events`, kind: 'job', id: jobId }) as AsyncGenerator<JobEvent>;
}

/** A log's events until `end` (included), reconnecting after the last id seen when the stream breaks. */
export async function* logEvents(api: Api, source: EventLogSource): AsyncGenerator<{ id?: string; event: string; data: unknown }> {
  let lastId: string | undefined;
  let failures = 0;
  let lastError = '';
  for (;;) {
    const controller = new AbortController();
    try {
      const res = await api.send(source.service, 'GET', source.path, {
        kind: 'stream',
        headers: { accept: 'text/event-stream', ...(lastId !== undefined ? { 'last-event-id': lastId } : {}) },
        signal: controller.signal,
      });
      if (!res.body) throw new CliError('the event stream has no body');
      for await (const message of parseSse(res.body)) {
        failures = 0;
        if (message.id !== undefined) lastId = message.id;
        let data: unknown;
        try {
          data = JSON.parse(message.data);
        } catch {
          data = message.data;
        }
        const event = message.event ?? 'message';
        yield { ...(message.id !== undefined ? { id: message.id } : {}), event, data };
        if (message.event === 'end') return;
      }
      lastError = `the stream ended before the ${source.kind} did`;
    } catch (err) {
      // An answer about the request itself (unknown id, bad key) will not change on a retry; a 5xx might.
      if (err instanceof ApiError && err.status < 500) throw err;
      if (!(err instanceof CliError) && !(err instanceof TypeError) && (err as Error).name !== 'AbortError') throw err;
      lastError = (err as Error).message;
    } finally {
      controller.abort();
    }
    failures += 1;
    if (failures > MAX_RECONNECTS) throw new CliError(`lost the event stream of ${source.kind} ${source.id}: ${lastError}`);
    // Back off before reconnecting: 0.5 s, 1 s, … up to 5 s.
    await new Promise((resolve) => setTimeout(resolve, Math.min(500 * failures, 5_000)));
  }
}

/** Reads the job's log after `cursor.lastId` for at most `withinMs` (a finished job's stream ends after it; a running
 *  job's goes on, and what came by then is taken as read), moving the cursor past each event and handing each `log`
 *  message to `onLog`. Throws when the log could not be read at all (no answer, or not a 2xx). */
async function readJobLog(api: Api, jobId: string, cursor: { lastId?: string | undefined }, withinMs: number, onLog?: (message: string) => void): Promise<void> {
  const controller = new AbortController();
  const cut = setTimeout(() => controller.abort(), withinMs);
  let answered = false;
  try {
    const res = await api.send('training', 'GET', `/jobs/${segment(jobId)}/events`, {
      kind: 'stream',
      headers: { accept: 'text/event-stream', ...(cursor.lastId !== undefined ? { 'last-event-id': cursor.lastId } : {}) },
      signal: controller.signal,
    });
    answered = true;
    for await (const message of parseSse(res.body!)) {
      if (message.event === 'end') break;
      if (message.id !== undefined) cursor.lastId = message.id;
      if (onLog && message.event === 'log') {
        const text = (JSON.parse(message.data) as { message?: string }).message;
        if (text !== undefined) onLog(text);
      }
    }
  } catch (err) {
    // Cut while the log streamed in: what came is what was read. Cut before any answer: the log was not read.
    if (!controller.signal.aborted || !answered) throw err;
  } finally {
    clearTimeout(cut);
    controller.abort();
  }
}

/** The id of the last event in the job's log now (undefined when it has none): where watchJobLog starts. */
export async function jobLogEnd(api: Api, jobId: string, withinMs = 3_000): Promise<string | undefined> {
  const cursor: { lastId?: string } = {};
  await readJobLog(api, jobId, cursor, withinMs);
  return cursor.lastId;
}

/** While `until` is pending, hands `onMessage` each `log` message the job's log gets after the event `from` (see
 *  jobLogEnd) that `wanted` keeps, read again every `everyMs`. For commands that wait on one request about a job's
 *  model: the worker tells the job's log what the request waits for, a cold model loading (#39). Best effort: the
 *  request's answer is what counts, so a read that fails is tried again at the next turn, and nothing is thrown. */
export async function watchJobLog(
  api: Api,
  jobId: string,
  from: string | undefined,
  wanted: (message: string) => boolean,
  onMessage: (message: string) => void,
  until: Promise<unknown>,
  everyMs = 2_000,
): Promise<void> {
  let done = false;
  const settled = until.then(
    () => (done = true),
    () => (done = true),
  );
  const cursor = { lastId: from };
  while (!done) {
    await readJobLog(api, jobId, cursor, 2 * everyMs, (text) => {
      if (!done && wanted(text)) onMessage(text);
    }).catch(() => {}); // read again at the next turn
    await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, everyMs))]);
  }
}
