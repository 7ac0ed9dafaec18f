// After a training job completes on this worker, its model is prepared in the background for the fast engine: the GGUF
// files that /v1 chat, `ftune chat`, the console's playground and use_fast_engine run (an adapter as a GGUF LoRA over
// its base's GGUF, a whole model as its GGUF), so the first chat does not wait minutes for a conversion. Only on a
// worker that serves the infer queue (the files are this worker's cache), unless PREPARE_GGUF_AFTER_TRAINING is false.
// Each build is told in the job's event log while it runs (build-progress.ts); a chat that comes meanwhile joins it.
import type { Platform } from '@ftp/platform';
import { throughputKey, trainsWholeModel } from '@ftp/jobs';
import type { TrainingConfig } from '@ftp/schema';
import { JobModels } from '../models/job-models.ts';
import type { Machine } from '../training/preflight.ts';

export class BackgroundPreparation {
  private readonly controller = new AbortController();
  private readonly running = new Set<Promise<void>>();

  /** `platform` is the worker's retrying one (withOutageRetries): every read and write here waits out an outage.
   *  `machine` is where the time it takes is recorded: dry runs add it to their estimate (#39). */
  constructor(
    private readonly platform: Platform,
    private readonly machine: Machine,
  ) {}

  /** Starts preparing the job's model when the job completed (a failed or handed-back job has none); returns at once.
   *  The job's history gets one event with the outcome: ready, or failed with the reason. */
  afterTraining(jobId: string): void {
    const work = this.prepare(jobId)
      .catch(async (err: unknown) => {
        if (this.controller.signal.aborted) return;
        const message = `preparing the model for the fast engine failed: ${err instanceof Error ? err.message : String(err)}; the first chat will try again`;
        this.platform.logger.warn({ err, jobId }, message);
        await this.platform.jobs.appendEvent(jobId, 'log', { level: 'warning', message, about: 'model' });
      })
      .catch((err: unknown) => this.platform.logger.warn({ err, jobId }, 'the outcome of preparing the model for the fast engine could not be recorded'))
      .finally(() => this.running.delete(work));
    this.running.add(work);
  }

  /** Resolves once nothing is being prepared. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running);
  }

  /** Cancels what runs (the worker stops) and waits for it. */
  async stop(): Promise<void> {
    this.controller.abort();
    await this.idle();
  }

  private async prepare(jobId: string): Promise<void> {
    const job = await this.platform.jobs.getForWorker(jobId);
    // Vision models run on transformers (no GGUF): nothing to prepare.
    if (job?.status !== 'completed' || job.modality !== 'text') return;
    // At the lowest CPU priority: the worker's next job, or a chat, must not wait on a conversion nobody asked for yet
    // (#39: scaled out, it held the next job in preparing for two minutes).
    const models = new JobModels(this.platform, job, { signal: this.controller.signal, background: true });
    const quantization = this.platform.config.FAST_ENGINE_QUANTIZATION;
    const started = Date.now();
    // What the next job of this model, method and trainer will wait here: its own conversion. The base's GGUF is
    // built once per worker and then cached, so it is not counted.
    let ownSeconds: number;
    if (trainsWholeModel(job)) {
      await models.gguf(quantization);
      ownSeconds = (Date.now() - started) / 1000;
    } else {
      // One conversion at a time: each is a process of its own, and the machine may be a laptop.
      await models.adapterGguf();
      ownSeconds = (Date.now() - started) / 1000;
      await models.baseGguf(quantization);
    }
    const message = `the model is ready for chat on the fast engine (prepared after training in ${Math.round((Date.now() - started) / 1000)} s)`;
    await this.platform.jobs.appendEvent(jobId, 'log', { level: 'info', message, about: 'model' });
    this.platform.logger.info({ jobId }, message);
    // The key the job's speed was recorded under when it completed, derived as run-training-job.ts derives it.
    const key = throughputKey(job.training_config as unknown as TrainingConfig);
    await this.platform.workers.recordChatReady({ ...this.machine, ...key, chat_ready_seconds: ownSeconds });
  }
}
