// A training job's history as its page reads it: progress points for the curves, evaluations, the status and log lines
// (each with when it was recorded), and the final job; what to draw from it (loss or GRPO's reward, the warnings,
// whether there is a curve yet). Pure functions of the events, so they are tested without a browser.
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
  /** When the event was recorded (ISO 8601); unset from a service that did not say. */
  at: string | undefined;
}

export interface JobHistory {
  progress: ProgressPoint[];
  evals: EvalPoint[];
  log: LogLine[];
  /** The job as the stream's last event (`end`) gave it; unset while it runs. */
  final: TrainingJob | undefined;
}

export const emptyHistory = (): JobHistory => ({ progress: [], evals: [], log: [], final: undefined });

const num = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

/** Adds one event of the stream to the history. */
export function recordEvent(history: JobHistory, kind: string, data: Record<string, unknown>, seq: string | undefined): void {
  const at = typeof data.created_at === 'string' ? data.created_at : undefined;
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
    case 'metrics': {
      const { created_at: _at, ...figures } = data;
      history.evals.push({ ...figures, step: Number(data.step), eval_loss: num(data.eval_loss) });
      break;
    }
    case 'status':
      history.log.push({ seq, kind: 'status', level: data.error ? 'error' : 'info', text: `status ${String(data.status)}${data.error ? `: ${String(data.error)}` : ''}`, at });
      break;
    case 'log':
      history.log.push({ seq, kind: 'log', level: String(data.level ?? 'info'), text: String(data.message ?? ''), at });
      break;
    case 'end':
      history.final = data as unknown as TrainingJob;
      break;
    default:
      break;
  }
}

/** Whether there is anything to draw yet: a queued or preparing job has no curve, and empty chart boxes say nothing. */
export function hasCurves(history: JobHistory): boolean {
  return history.progress.length > 0 || history.evals.some((e) => !e.final);
}

/** The job's warnings, each once (a warning that says the job cannot learn must not sit unread in a scrolled log). */
export function warningsOf(history: JobHistory): string[] {
  return [...new Set(history.log.filter((line) => line.level === 'warning').map((line) => line.text))];
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

/** eval_config.graders' score at each evaluation of the run (valid_score: the graders' mean), and each grader's
 *  (valid_score/<name>); empty when the job has no graders. */
export function validScoreSeries(history: JobHistory): { names: string[]; data: [number[], ...Array<Array<number | null>>] } {
  const during = history.evals.filter((e) => !e.final && num(e.valid_score) !== null);
  const names = ['valid_score', ...new Set(during.flatMap((e) => Object.keys(e).filter((k) => k.startsWith('valid_score/'))))];
  const steps = during.map((e) => e.step);
  return { names: during.length > 0 ? names : [], data: [steps, ...names.map((name) => during.map((e) => num(e[name])))] };
}

/** One figure of the progress points by step (learning rate, tokens/s), the steps that have it. */
export function progressSeries(history: JobHistory, key: 'learning_rate' | 'tokens_per_second'): [number[], Array<number | null>] {
  const byStep = new Map<number, number>();
  for (const p of history.progress) if (p[key] !== null) byStep.set(p.step, p[key]);
  const steps = [...byStep.keys()].sort((a, b) => a - b);
  return [steps, steps.map((s) => byStep.get(s)!)];
}
