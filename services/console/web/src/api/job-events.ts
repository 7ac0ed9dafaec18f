// A training job's history and live progress from GET /jobs/{id}/events (server-sent events): progress points for
// the curves, evaluations, the status and log lines, and the final job when it ends. A dropped connection is resumed
// where it stopped (Last-Event-ID); the stream ends by itself once the job has.
import { serverSentEvents } from './client.ts';
import type { TrainingJob } from './types.ts';

export interface ProgressPoint {
  step: number;
  total_steps: number | null;
  epoch: number | null;
  loss: number | null;
  /** GRPO: the step's mean reward (its loss is ~0 by construction). */
  reward: number | null;
  learning_rate: number | null;
  tokens_per_second: number | null;
  eta_seconds: number | null;
}

export interface EvalPoint {
  step: number;
  eval_loss: number | null;
  /** The evaluation after training, not the trainer's (see the core's Metrics event). */
  final?: boolean;
  [metric: string]: unknown;
}

export interface LogLine {
  seq: string | undefined;
  kind: 'status' | 'log';
  level: string;
  text: string;
}

export interface JobHistory {
  progress: ProgressPoint[];
  evals: EvalPoint[];
  log: LogLine[];
  /** The job as the stream's last event (`end`) gave it; unset while it runs. */
  final: TrainingJob | undefined;
}

export const emptyHistory = (): JobHistory => ({ progress: [], evals: [], log: [], final: undefined });

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
        record(history, message.event ?? 'message', JSON.parse(message.data) as Record<string, unknown>, message.id);
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

const num = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

function record(history: JobHistory, kind: string, data: Record<string, unknown>, seq: string | undefined): void {
  switch (kind) {
    case 'progress':
      history.progress.push({
        step: Number(data.step),
        total_steps: num(data.total_steps),
        epoch: num(data.epoch),
        loss: num(data.loss),
        // the worker has put it beside the loss since #39; before, only the trainer's figures (extra) held it
        reward: num(data.reward) ?? num((data.extra as Record<string, unknown> | undefined)?.reward),
        learning_rate: num(data.learning_rate),
        tokens_per_second: num(data.tokens_per_second),
        eta_seconds: num(data.eta_seconds),
      });
      break;
    case 'metrics':
      history.evals.push({ ...data, step: Number(data.step), eval_loss: num(data.eval_loss) });
      break;
    case 'status':
      history.log.push({ seq, kind: 'status', level: data.error ? 'error' : 'info', text: `status ${String(data.status)}${data.error ? `: ${String(data.error)}` : ''}` });
      break;
    case 'log':
      history.log.push({ seq, kind: 'log', level: String(data.level ?? 'info'), text: String(data.message ?? '') });
      break;
    case 'end':
      history.final = data as unknown as TrainingJob;
      break;
    default:
      break;
  }
}

/** Train loss and eval loss on one step axis (eval points are sparse: null between them). */
export function lossSeries(history: JobHistory): [number[], Array<number | null>, Array<number | null>] {
  const train = new Map<number, number>();
  for (const p of history.progress) if (p.loss !== null) train.set(p.step, p.loss);
  // The trainer's evaluations make the curve; the one after training (final) measures per assistant token, so it is
  // the curve only when the trainer evaluated nothing (eval_strategy no).
  const during = history.evals.filter((e) => !e.final);
  const evals = new Map<number, number>();
  for (const e of during.length > 0 ? during : history.evals) if (e.eval_loss !== null) evals.set(e.step, e.eval_loss);
  const steps = [...new Set([...train.keys(), ...evals.keys()])].sort((a, b) => a - b);
  return [steps, steps.map((s) => train.get(s) ?? null), steps.map((s) => evals.get(s) ?? null)];
}

/** GRPO's figure: the training reward by step, and the evaluations' reward (sparse: null between them). */
export function rewardSeries(history: JobHistory): [number[], Array<number | null>, Array<number | null>] {
  const train = new Map<number, number>();
  for (const p of history.progress) if (p.reward !== null) train.set(p.step, p.reward);
  const evals = new Map<number, number>();
  for (const e of history.evals) if (!e.final && num(e.eval_reward) !== null) evals.set(e.step, num(e.eval_reward)!);
  const steps = [...new Set([...train.keys(), ...evals.keys()])].sort((a, b) => a - b);
  return [steps, steps.map((s) => train.get(s) ?? null), steps.map((s) => evals.get(s) ?? null)];
}

/** One figure of the progress points by step (learning rate, tokens/s), the steps that have it. */
export function progressSeries(history: JobHistory, key: 'learning_rate' | 'tokens_per_second'): [number[], Array<number | null>] {
  const byStep = new Map<number, number>();
  for (const p of history.progress) if (p[key] !== null) byStep.set(p.step, p[key]);
  const steps = [...byStep.keys()].sort((a, b) => a - b);
  return [steps, steps.map((s) => byStep.get(s)!)];
}
