// The core's events during training, recorded in order: progress and metrics become the job's row and event
// log (what GET /jobs/{id} and its SSE stream read, from any process), checkpoints are copied into the blob
// store as they are saved (so the job can continue on another machine), artifacts are collected for the end.
import type { CoreEvent } from '@ftp/core-client';
import type { TrainingJobRow } from '@ftp/platform';
import { storeCheckpoint } from './checkpoints.ts';
import type { JobContext } from './job-context.ts';

export interface TrainingRecord {
  /** Artifact kind → local path, as the core reported them. */
  produced: Map<string, string>;
  onEvent(event: CoreEvent): Promise<void>;
}

export function recordTraining(ctx: JobContext, job: TrainingJobRow): TrainingRecord {
  const { jobs } = ctx.platform;
  const jobId = job.job_id;
  const produced = new Map<string, string>();
  let metrics: Record<string, number> = {};
  const onEvent = async (event: CoreEvent): Promise<void> => {
    switch (event.event) {
      case 'progress': {
        const progress = {
          step: event.step, total_steps: event.total_steps, epoch: event.epoch, loss: event.loss,
          eta_seconds: event.eta_seconds, learning_rate: event.learning_rate, tokens_per_second: event.tokens_per_second,
        };
        // The first progress event moves the job to training; later ones only update progress.
        const moved = await jobs.update(jobId, { status: 'training', progress }, ['preparing'], ctx.workerId);
        if (!moved) await jobs.update(jobId, { progress }, ['training'], ctx.workerId);
        await jobs.appendEvent(jobId, 'progress', progress);
        break;
      }
      case 'metrics': {
        const values = { eval_loss: event.eval_loss, perplexity: event.perplexity, accuracy: event.accuracy, eval_runtime: event.eval_runtime, ...event.extra };
        metrics = { ...metrics, ...Object.fromEntries(Object.entries(values).filter((e): e is [string, number] => typeof e[1] === 'number')) };
        const bestStep = event.extra.best_step;
        await jobs.update(jobId, { metrics, ...(bestStep !== undefined ? { best_step: bestStep } : {}) }, undefined, ctx.workerId);
        await jobs.appendEvent(jobId, 'metrics', { step: event.step, ...values });
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
        if (event.level === 'warning' || event.level === 'error') await jobs.appendEvent(jobId, 'log', { level: event.level, message: event.message });
        break;
      default:
        break;
    }
  };
  return { produced, onEvent };
}
