// The core's events during training, recorded in order: the pre-flight report (with the fleet's estimates) is stored
// with the job, progress and metrics become the job's row and event log (what GET /jobs/{id} and its SSE stream read, from any process), checkpoints are copied into the blob
// store as they are saved (so the job can continue on another machine), artifacts are collected for the end.
import type { CoreEvent } from '@ftp/core-client';
import type { TrainingJobRow } from '@ftp/platform';
import { estimateOnFleet, throughputKey, type CoreReport } from '@ftp/jobs/training';
import { jobConfig, PreflightReport } from '@ftp/schema';
import { storeCheckpoint } from './checkpoints.ts';
import type { JobContext } from './job-context.ts';

export interface TrainingRecord {
  /** Artifact kind → local path, as the core reported them. */
  produced: Map<string, string>;
  /** The tokens/s the run trained at: its trained tokens over the wall-clock time between its first and last progress
   *  events (what pre-flight's estimate divides by); the mean of the rates the core reported while that cannot be
   *  told (fewer than two progress events with a count). Null before any. */
  tokensPerSecond(): number | null;
  /** The tokens its pre-flight report counted for the whole run (null before the report). */
  plannedTokens(): number | null;
  /** The job's metrics once it completes: the evaluations' and `trained_tokens`, the tokens the core trained on over
   *  all epochs (its last progress event's count, an integer); null when it reported no count (metrics stay as stored). */
  finalMetrics(): Record<string, number> | null;
  onEvent(event: CoreEvent): Promise<void>;
  /** When (ms since the epoch) the run's phases began on this worker: its first step, its saving; null before. */
  phases(): { trainingAt: number | null; savingAt: number | null };
}

export function recordTraining(ctx: JobContext, job: TrainingJobRow): TrainingRecord {
  const { jobs } = ctx.platform;
  const jobId = job.job_id;
  const produced = new Map<string, string>();
  const speeds: number[] = [];
  // the first and the latest trained-token counts, with when they came
  let firstCount: TokenCount | undefined;
  let lastCount: TokenCount | undefined;
  let metrics: Record<string, number> = {};
  let trainedTokens: number | undefined;
  let planned: number | null = null;
  let trainingAt: number | null = null;
  let savingAt: number | null = null;
  const onEvent = async (event: CoreEvent): Promise<void> => {
    switch (event.event) {
      case 'preflight': {
        // The same report a dry run answers, with the fleet's estimates; its warnings go to the event log too.
        const made = PreflightReport.safeParse(await estimateOnFleet(ctx.platform, event.report as unknown as CoreReport, throughputKey(jobConfig(job))));
        if (!made.success) {
          // only informs: a report this version cannot read is logged, and training goes on
          ctx.platform.logger.warn({ jobId, issues: made.error.issues }, 'pre-flight report not stored: not in the PreflightReport shape');
          break;
        }
        const preflight = made.data;
        planned = preflight.training_tokens;
        await jobs.update(jobId, { preflight }, undefined, ctx.workerId);
        for (const warning of preflight.warnings) await jobs.appendEvent(jobId, 'log', { level: 'warning', message: `pre-flight: ${warning.message}` });
        break;
      }
      case 'progress': {
        // A run resumed from its last step runs past its planned total (#56: step 51 of 50, eta -0.1, from a core
        // before the fix): recorded with a total that counts every step run and an ETA of at least 0.
        const progress = {
          step: event.step, total_steps: Math.max(event.total_steps, event.step), epoch: event.epoch, loss: event.loss,
          eta_seconds: event.eta_seconds === null ? null : Math.max(0, event.eta_seconds), learning_rate: event.learning_rate, tokens_per_second: event.tokens_per_second,
          // GRPO: what the job's pages and lists show instead of its ~0 loss (#39)
          ...(event.extra.reward !== undefined ? { reward: event.extra.reward } : {}),
        };
        // The first progress event moves the job to training; later ones only update progress.
        trainingAt ??= Date.now();
        const moved = await jobs.update(jobId, { status: 'training', progress }, ['preparing'], ctx.workerId);
        if (!moved) await jobs.update(jobId, { progress }, ['training'], ctx.workerId);
        // The log also keeps the trainer's extra figures (token accuracy, trained tokens, …): what /v1 events show.
        await jobs.appendEvent(jobId, 'progress', Object.keys(event.extra).length > 0 ? { ...progress, extra: event.extra } : progress);
        if (event.tokens_per_second) speeds.push(event.tokens_per_second);
        if (event.extra.trained_tokens !== undefined) {
          trainedTokens = Math.round(event.extra.trained_tokens);
          lastCount = { at: Date.now(), tokens: event.extra.trained_tokens };
          firstCount ??= lastCount;
        }
        break;
      }
      case 'metrics': {
        const values = { eval_loss: event.eval_loss, perplexity: event.perplexity, accuracy: event.accuracy, eval_runtime: event.eval_runtime, ...event.extra };
        metrics = { ...metrics, ...Object.fromEntries(Object.entries(values).filter((e): e is [string, number] => typeof e[1] === 'number')) };
        const bestStep = event.extra.best_step;
        await jobs.update(jobId, { metrics, ...(bestStep !== undefined ? { best_step: bestStep } : {}) }, undefined, ctx.workerId);
        await jobs.appendEvent(jobId, 'metrics', { step: event.step, ...values, ...(event.final ? { final: true } : {}) });
        break;
      }
      case 'checkpoint':
        await storeCheckpoint(ctx.platform, job, event.path);
        break;
      case 'artifact':
        produced.set(event.kind, event.path);
        break;
      case 'tracker':
        await jobs.update(jobId, { tracker_url: event.url }, undefined, ctx.workerId);
        break;
      case 'log':
        // Warnings, and the notes that say what the run does: where it trains (the GPU, the dtype, the kernel),
        // what a setting does not apply to, what memory made it choose.
        if (event.stage === 'saving') savingAt ??= Date.now();
        if (event.level !== 'debug') await jobs.appendEvent(jobId, 'log', { level: event.level, message: event.message });
        break;
      default:
        break;
    }
  };
  const tokensPerSecond = () => wallClockRate(firstCount, lastCount) ?? (speeds.length === 0 ? null : speeds.reduce((a, b) => a + b, 0) / speeds.length);
  const finalMetrics = () => (trainedTokens === undefined ? null : { ...metrics, trained_tokens: trainedTokens });
  return { produced, onEvent, tokensPerSecond, plannedTokens: () => planned, finalMetrics, phases: () => ({ trainingAt, savingAt }) };
}

/** Cumulative trained tokens, and when (ms since the epoch) the core counted them. */
export interface TokenCount {
  at: number;
  tokens: number;
}

/** Tokens per second between a first and a last count, wall-clock: the pauses between steps (evaluations,
 *  checkpoints) included, as they are in a job's time. The core's per-step rates leave them out, and their mean made
 *  pre-flight's 200-step estimates 23–30% long (#39). Null without both counts, under a second apart, or with no
 *  tokens between them. */
export function wallClockRate(first: TokenCount | undefined, last: TokenCount | undefined): number | null {
  if (!first || !last || last.at - first.at < 1_000 || last.tokens <= first.tokens) return null;
  return (last.tokens - first.tokens) / ((last.at - first.at) / 1000);
}
