// A worker: registers its devices, recovers jobs and exports a previous worker left behind, consumes the
// training queue (WORKER_CONCURRENCY at a time) and the export queue (one at a time, its own lane), watches
// for cancels and keeps a heartbeat.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { exportQueue, newId, trainingQueue, type Platform, type QueueDefinition } from '@ftp/platform';
import { runTrainingJob, SHUTDOWN, WORKER_STOPPED } from './training/run-training-job.ts';
import { recoverExports, runExportJob } from './export/run-export-job.ts';

const HEARTBEAT_MS = 2_000;
/** A worker silent for this long is gone; its running jobs are failed by whoever notices. */
const STALE_WORKER_SECONDS = 30;

export interface WorkerHandle {
  workerId: string;
  /** Cancels running jobs' cores and waits for them, then stops. */
  stop(): Promise<void>;
}

export interface WorkerOptions {
  /** True when this worker is the only one (the embedded stack): every job found running at start is an orphan. */
  sole?: boolean;
  concurrency?: number;
}

/** CUDA devices as nvidia-smi lists them; none when it is missing. Fast: no torch import. */
export async function detectDevices(): Promise<{ cuda: boolean; gpus: string[] }> {
  try {
    const { stdout } = await promisify(execFile)('nvidia-smi', ['-L'], { timeout: 10_000 });
    const gpus = stdout.split('\n').filter((l) => l.startsWith('GPU '));
    return { cuda: gpus.length > 0, gpus };
  } catch {
    return { cuda: false, gpus: [] };
  }
}

async function recoverJobs(platform: Platform, workerId: string, sole: boolean): Promise<void> {
  const staleWorkers = new Set(
    (await platform.db.query<{ worker_id: string }>(
      `SELECT worker_id FROM workers WHERE worker_id <> $1 AND heartbeat_at < now() - ($2 || ' seconds')::interval`,
      [workerId, String(STALE_WORKER_SECONDS)],
    )).map((r) => r.worker_id),
  );
  for (const job of await platform.jobs.listByStatus(['preparing', 'training'])) {
    if (job.worker_id === workerId) continue;
    if (!(sole || !job.worker_id || staleWorkers.has(job.worker_id))) continue;
    // A job that asked to be resumed goes back to the queue; its run folder keeps the checkpoints the
    // core saved when its worker went away, and the next run resumes from the newest one.
    const resume = (job.training_config as { resume_on_restart?: boolean }).resume_on_restart === true;
    if (resume && (await platform.jobs.update(job.job_id, { status: 'queued', worker_id: null }, ['preparing', 'training']))) {
      // A sole worker re-queues every queued row right after this; otherwise queue it here.
      if (!sole) await platform.queue.add(trainingQueue, { jobId: job.job_id });
      platform.logger.warn({ jobId: job.job_id }, 'job re-queued to resume: its worker stopped');
    } else {
      await platform.jobs.update(job.job_id, { status: 'failed', error: WORKER_STOPPED, finished_at: new Date() }, ['preparing', 'training']);
      platform.logger.warn({ jobId: job.job_id }, 'job failed: its worker stopped');
    }
  }
  await recoverExports(platform, workerId, sole, staleWorkers);
}

/** Consumes `queue`, with an AbortController per item at work (cancels and shutdown abort it); returns them by id. */
function consume<P>(
  platform: Platform,
  queue: QueueDefinition<P>,
  idOf: (payload: P) => string,
  run: (id: string, signal: AbortSignal) => Promise<void>,
  concurrency: number,
): Map<string, AbortController> {
  const atWork = new Map<string, AbortController>();
  platform.queue.process(
    queue,
    async (payload) => {
      const id = idOf(payload);
      const controller = new AbortController();
      atWork.set(id, controller);
      try {
        await run(id, controller.signal);
      } finally {
        atWork.delete(id);
      }
    },
    { concurrency },
  );
  return atWork;
}

export async function startWorker(platform: Platform, options: WorkerOptions = {}): Promise<WorkerHandle> {
  const workerId = newId('wrk');
  const devices = await detectDevices();
  await platform.jobs.registerWorker(workerId, devices);
  await recoverJobs(platform, workerId, options.sole ?? false);
  // The in-process queue is not durable: the rows are the truth, so queued jobs are queued again, in order.
  if (options.sole) {
    for (const job of await platform.jobs.listByStatus(['queued'])) await platform.queue.add(trainingQueue, { jobId: job.job_id });
  }

  const context = (id: string, signal: AbortSignal) => ({ platform, workerId, secrets: platform.jobSecrets.take(id), signal });
  const running = consume(platform, trainingQueue, (p) => p.jobId, (id, signal) => runTrainingJob(context(id, signal), id),
    options.concurrency ?? platform.config.WORKER_CONCURRENCY);
  // Exports have their own lane, so a long training run never holds them up (and one export at a time).
  const exporting = consume(platform, exportQueue, (p) => p.exportId, (id, signal) => runExportJob(context(id, signal), id), 1);

  // Heartbeat, cancel requests (a flag on the row, so any process can ask), and orphans of other workers.
  let ticking = false;
  const timer = setInterval(() => {
    if (ticking) return;
    ticking = true;
    void (async () => {
      await platform.jobs.heartbeat(workerId);
      for (const [jobId, controller] of running) {
        const job = await platform.jobs.getForWorker(jobId);
        if (!job || job.cancel_requested) controller.abort();
      }
      if (!options.sole) await recoverJobs(platform, workerId, false);
    })()
      .catch((err: unknown) => platform.logger.warn({ err }, 'worker heartbeat failed'))
      .finally(() => (ticking = false));
  }, HEARTBEAT_MS);
  timer.unref();

  platform.logger.info({ workerId, devices }, 'worker started');
  return {
    workerId,
    async stop() {
      clearInterval(timer);
      for (const controller of [...running.values(), ...exporting.values()]) controller.abort(SHUTDOWN);
      await platform.queue.close();
    },
  };
}


