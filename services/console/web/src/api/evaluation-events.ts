// An evaluation with benchmarks followed over GET /evaluations/{id}/events (server-sent events): its status as it
// changes, the lines of its log, then the final evaluation. A dropped connection is resumed where it stopped
// (Last-Event-ID); the stream ends by itself once the evaluation has.
import { serverSentEvents } from './client.ts';
import type { Evaluation, EvaluationStatus } from './types.ts';

const FLUSH_MS = 250;

export interface EvaluationLogLine {
  at: string;
  level: 'debug' | 'info' | 'warning' | 'error';
  message: string;
  /** Which run said it, with with_base: the model's or the base model's. */
  model?: 'model' | 'base';
}

export interface EvaluationNews {
  status?: EvaluationStatus;
  log: EvaluationLogLine[];
  /** The evaluation as it ended (the stream's `end`). */
  final?: Evaluation;
  deleted?: boolean;
}

/** Follows an evaluation's events until it ends or `signal` aborts, calling `onUpdate` with the news so far (at most
 *  every FLUSH_MS, so that a long log replayed renders a few times, not once a line). */
export async function followEvaluation(id: string, signal: AbortSignal, onUpdate: (news: EvaluationNews) => void): Promise<void> {
  const news: EvaluationNews = { log: [] };
  let lastId: string | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const publish = () => {
    timer = undefined;
    onUpdate({ ...news, log: [...news.log] });
  };
  const ended = () => news.final !== undefined || news.deleted === true;
  while (!signal.aborted && !ended()) {
    try {
      const events = serverSentEvents('inference', `/evaluations/${encodeURIComponent(id)}/events`, { signal, headers: lastId ? { 'last-event-id': lastId } : {} });
      for await (const message of events) {
        if (message.id) lastId = message.id;
        const data = JSON.parse(message.data) as Record<string, unknown>;
        if (message.event === 'status') news.status = data.status as EvaluationStatus;
        else if (message.event === 'log') news.log.push({ at: String(data.created_at), level: data.level as EvaluationLogLine['level'], message: String(data.message), ...(data.model ? { model: data.model as 'model' | 'base' } : {}) });
        else if (message.event === 'end') {
          if ('deleted' in data) news.deleted = true;
          else news.final = data as unknown as Evaluation;
        }
        timer ??= setTimeout(publish, FLUSH_MS);
      }
    } catch (err) {
      if (signal.aborted) break;
      // A 404 (deleted) or 401 is final; a dropped connection is tried again.
      if ((err as { status?: number }).status) throw err;
    }
    if (!ended() && !signal.aborted) await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  if (timer) clearTimeout(timer);
  if (!signal.aborted) publish();
}
