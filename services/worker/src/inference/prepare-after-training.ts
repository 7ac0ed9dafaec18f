// After a training job completes on this worker, its model is prepared in the background for the fast engine: the GGUF
// files that /v1 chat, `ftune chat`, the console's playground and use_fast_engine run (an adapter as a GGUF LoRA over
// its base's GGUF, a whole model as its GGUF), so the first chat does not wait minutes for a conversion. Only on a
// worker that serves the infer queue (the files are this worker's cache), unless PREPARE_GGUF_AFTER_TRAINING is false.
// Each build is told in the job's event log while it runs (build-progress.ts); a chat that comes meanwhile joins it.
// One preparation at a time, in the order the jobs completed (#56: a soak's worker held 6 conversions at once, the
// oldest 7 minutes after its job, each with the ML libraries in memory); a job deleted while it waits is skipped. What
// runs and what waits is in GET /workers (`preparing`).
import type { Platform, WorkerPreparing } from '@ftp/platform';
import { throughputKey } from '@ftp/jobs/training';
import { trainsWholeModel } from '@ftp/jobs/models';
import { jobConfig } from '@ftp/schema';
import { JobModels } from '../models/job-models.ts';
import type { Machine } from '../training/preflight.ts';

export class BackgroundPreparation {
  private readonly controller = new AbortController();
  private readonly waiting: string[] = [];
  private current: string | null = null;
  private turn: Promise<void> | undefined;
  private running = 0;
  /** The most preparations that ever ran at once on this worker (the test of the bound reads it). */
  mostAtOnce = 0;

  /** `platform` is the worker's retrying one (withOutageRetries): every read and write here waits out an outage.
   *  `machine` is where the time it takes is recorded: dry runs add it to their estimate (#39). */
  constructor(
    private readonly platform: Platform,
    private readonly machine: Machine,
  ) {}

  /** Queues the job's model for preparation (a failed or handed-back job has none, nor a deleted one); returns at once.
   *  The job's history gets one event with the outcome: ready, or failed with the reason. */
  afterTraining(jobId: string): void {
    if (this.controller.signal.aborted || this.current === jobId || this.waiting.includes(jobId)) return;
    this.waiting.push(jobId);
    this.turn ??= this.drain();
  }

  /** What runs and what waits: the heartbeat carries it to GET /workers. */
  state(): WorkerPreparing {
    return { job_id: this.current, waiting: [...this.waiting] };
  }

  /** Resolves once nothing is being prepared or waits. */
  async idle(): Promise<void> {
    while (this.turn) await this.turn;
  }

  /** Cancels what runs (the worker stops), drops what waits (the first chat of those models converts them) and waits. */
  async stop(): Promise<void> {
    this.controller.abort();
    this.waiting.length = 0;
    await this.idle();
  }

  /** Prepares what waits, oldest first, until nothing does; `turn` is cleared in the same tick as the last look at
   *  `waiting`, so a job queued after it starts a new turn. */
  private async drain(): Promise<void> {
    for (let jobId = this.waiting.shift(); jobId !== undefined && !this.controller.signal.aborted; jobId = this.waiting.shift()) {
      this.current = jobId;
      this.running += 1;
      this.mostAtOnce = Math.max(this.mostAtOnce, this.running);
      try {
        await this.prepareRecorded(jobId);
      } finally {
        this.running -= 1;
        this.current = null;
      }
    }
    this.turn = undefined;
  }

  private async prepareRecorded(jobId: string): Promise<void> {
    await this.prepare(jobId)
      .catch(async (err: unknown) => {
        if (this.controller.signal.aborted) return;
        const message = `preparing the model for the fast engine failed: ${err instanceof Error ? err.message : String(err)}; the first chat will try again`;
        this.platform.logger.warn({ err, jobId }, message);
        await this.platform.jobs.appendEvent(jobId, 'log', { level: 'warning', message, about: 'model' });
      })
      .catch((err: unknown) => this.platform.logger.warn({ err, jobId }, 'the outcome of preparing the model for the fast engine could not be recorded'));
  }

  private async prepare(jobId: string): Promise<void> {
    const job = await this.platform.jobs.getForWorker(jobId);
    // Deleted while it waited, or vision (transformers runs it, no GGUF): nothing to prepare. Nor a sweep's trial: of
    // its many trials one is the best, chatted with perhaps, and each conversion would take the CPUs from the next.
    if (job?.status !== 'completed' || job.modality !== 'text' || job.sweep_id) return;
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
    const key = throughputKey(jobConfig(job));
    await this.platform.workers.recordChatReady({ ...this.machine, ...key, chat_ready_seconds: ownSeconds });
  }
}
