// Work whose worker is gone. A worker that has not beaten its heartbeat for WORKER_TIMEOUT_S is dead: its
// training jobs fail ("the worker <id> stopped") or, when they asked for it (resume_on_restart), go back to the
// queue to continue from their last stored checkpoint; its exports and the datasets it was augmenting are queued
// again (they write the same keys, and their secrets are sealed in the database, not in the dead process). Every
// long-lived process runs the watchdog, API processes included, so this holds when the dead worker was the only one. Each change is a
// guarded UPDATE (the row still names that worker and the worker is still silent), so when several processes
// notice the same death only one of them acts on each row, and a worker that just registered is never taken for dead.
import type { Platform, TrainingJobRow } from '@ftp/platform';
import { workerStopped } from './messages.ts';
import { augmentQueue, exportQueue, trainingQueue } from './queues.ts';

export interface RecoveryOptions {
  /** Every registered worker is gone (the embedded default at start: no other process can be running). */
  everyWorkerGone?: boolean;
}

const wantsResume = (job: TrainingJobRow): boolean => (job.training_config as { resume_on_restart?: boolean }).resume_on_restart === true;

/** Fails or re-queues the work of dead workers, forgets them, and deletes expired secrets. */
export async function recoverOrphans(platform: Platform, options: RecoveryOptions = {}): Promise<void> {
  const { workers, jobs, exports, queue, logger } = platform;
  const timeoutS = platform.config.WORKER_TIMEOUT_S;
  if (options.everyWorkerGone) await workers.removeAll();

  for (const job of await jobs.listOrphaned(timeoutS)) {
    if (wantsResume(job)) {
      if (await jobs.releaseOrphan(job, { status: 'queued' }, timeoutS)) {
        await queue.add(trainingQueue, { jobId: job.job_id });
        logger.warn({ jobId: job.job_id, workerId: job.worker_id }, 'job queued again to resume: its worker stopped');
      }
    } else if (await jobs.releaseOrphan(job, { status: 'failed', error: workerStopped(job.worker_id) }, timeoutS)) {
      await platform.secrets.drop(job.job_id);
      logger.warn({ jobId: job.job_id, workerId: job.worker_id }, 'job failed: its worker stopped');
    }
  }

  for (const row of await exports.listOrphaned(timeoutS)) {
    if (await exports.releaseOrphan(row, `queued again: the worker ${row.worker_id} stopped before this export finished`, timeoutS)) {
      await queue.add(exportQueue, { exportId: row.export_id });
      logger.warn({ exportId: row.export_id, workerId: row.worker_id }, 'export queued again: its worker stopped');
    }
  }

  for (const row of await platform.datasets.listProcessingOrphaned(timeoutS)) {
    // It starts over on whichever worker takes it; its llm_api_key stays sealed until then.
    if (await platform.datasets.releaseProcessing(row, timeoutS)) {
      await queue.add(augmentQueue, { processedDatasetId: row.processed_dataset_id });
      logger.warn({ processedDatasetId: row.processed_dataset_id, workerId: row.worker_id }, 'dataset processing queued again: its worker stopped');
    }
  }

  await workers.removeSilent(timeoutS);
  await platform.secrets.sweepExpired();
}

/** Work the in-process queue held when its process stopped: queued jobs and exports not yet taken, re-added
 *  from the rows in order. A durable queue (Redis) still has them. */
export async function requeuePending(platform: Platform): Promise<void> {
  if (platform.queue.durable) return;
  for (const job of await platform.jobs.listByStatus(['queued'])) await platform.queue.add(trainingQueue, { jobId: job.job_id });
  for (const row of await platform.exports.listRunning()) {
    if (row.worker_id === null) await platform.queue.add(exportQueue, { exportId: row.export_id });
  }
  for (const row of await platform.datasets.listProcessingPending()) await platform.queue.add(augmentQueue, { processedDatasetId: row.processed_dataset_id });
}

export interface Watchdog {
  stop(): Promise<void>;
}

/** How often processes look for dead workers and workers beat their heartbeat: a quarter of the timeout, 1–15 s. */
export function watchIntervalMs(platform: Pick<Platform, 'config'>): number {
  return Math.min(15_000, Math.max(1_000, (platform.config.WORKER_TIMEOUT_S * 1000) / 4));
}

/** Runs recoverOrphans every watchIntervalMs in this process until stopped. */
export function startWatchdog(platform: Platform): Watchdog {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = recoverOrphans(platform)
      .catch((err: unknown) => platform.logger.warn({ err }, 'looking for stopped workers failed'))
      .finally(() => (running = undefined));
  }, watchIntervalMs(platform));
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
