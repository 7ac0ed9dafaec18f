// Work whose worker is gone. A worker that has not beaten its heartbeat for WORKER_TIMEOUT_S is dead: its
// training jobs fail ("the worker <id> stopped") or, when they asked for it (resume_on_restart), go back to the
// queue to continue from their last stored checkpoint; its exports, batches, evaluations, sweeps and the datasets it was augmenting are
// queued again (a batch goes on from its first line not answered; an evaluation starts over, up to MAX_EVALUATION_ATTEMPTS
// workers) (they write the same keys, and their secrets are sealed in the database, not in the dead process). Every
// long-lived process runs the watchdog, API processes included, so this holds when the dead worker was the only one.
// Each change is a guarded UPDATE (the row still names that worker and its hold is still lost), so when several
// processes notice the same death only one of them acts on each row, and a worker that just registered is never
// taken for dead. The reconciler (reconciler.ts) releases work the same way when a live worker let go of it.
import { listWaiting, TINKER_WORK, type LostHold, type Platform, type TrainingJobRow } from '@ftp/platform';
import { augmentQueue, batchQueue, benchmarkQueue, evaluationLost, exportQueue, MAX_EVALUATION_ATTEMPTS, sessionQueue, sweepQueue, trainingQueue, workerLetGo, workerStopped } from '../queues/index.ts';
import { jobConfig } from '@ftp/schema';

export interface RecoveryOptions {
  /** Every registered worker is gone (the embedded default at start: no other process can be running). */
  everyWorkerGone?: boolean;
}

const wantsResume = (job: TrainingJobRow): boolean => jobConfig(job).resume_on_restart;

/** What happened to the worker, for messages: it stopped (silent), or it let go of the work (alive). */
const whatHappened = (workerId: string | null, lost: LostHold): string =>
  lost.kind === 'silent' ? `worker ${workerId} stopped` : `worker ${workerId} stopped working on it without finishing it`;

/** Fails or re-queues the work whose worker's hold is lost (`lost`); each row once, whoever else looks. */
export async function releaseLostWork(platform: Platform, lost: LostHold): Promise<void> {
  const { jobs, exports, queue, logger } = platform;
  for (const job of await jobs.listOrphaned(lost)) {
    if (job.pause_requested) {
      // The user asked it to pause: it is paused, at its last stored checkpoint.
      const checkpoint = await jobs.lastCheckpointStep(job.job_id);
      if (await jobs.releaseOrphan(job, { status: 'paused' }, lost)) {
        const at = checkpoint === undefined ? 'no checkpoint stored: a resume starts it over' : `a resume continues from checkpoint step ${checkpoint}`;
        await jobs.appendEvent(job.job_id, 'log', { level: 'warning', message: `paused: the ${whatHappened(job.worker_id, lost)} while pausing it (${at})` });
        platform.metrics.repairs.inc({ repair: 'job_paused' });
      }
    } else if (wantsResume(job)) {
      const checkpoint = await jobs.lastCheckpointStep(job.job_id);
      if (await jobs.releaseOrphan(job, { status: 'queued' }, lost)) {
        const from = checkpoint === undefined ? 'no checkpoint stored: it starts over' : `last checkpoint step ${checkpoint}`;
        await jobs.appendEvent(job.job_id, 'log', { level: 'warning', message: `re-queued after ${whatHappened(job.worker_id, lost)} (${from})` });
        await queue.add(trainingQueue, { jobId: job.job_id });
        platform.metrics.repairs.inc({ repair: 'job_requeued' });
        logger.warn({ jobId: job.job_id, workerId: job.worker_id, checkpoint }, `job queued again to resume: its ${whatHappened(job.worker_id, lost)}`);
      }
    } else {
      const error = lost.kind === 'silent' ? workerStopped(job.worker_id) : workerLetGo(job.worker_id);
      if (await jobs.releaseOrphan(job, { status: 'failed', error }, lost)) {
        await platform.secrets.drop(job.job_id);
        platform.metrics.repairs.inc({ repair: 'job_failed' });
        logger.warn({ jobId: job.job_id, workerId: job.worker_id }, `job failed: its ${whatHappened(job.worker_id, lost)}`);
      }
    }
  }

  for (const row of await exports.listOrphaned(lost)) {
    if (await exports.releaseOrphan(row, `queued again: the ${whatHappened(row.worker_id, lost)} before this export finished`, lost)) {
      await queue.add(exportQueue, { exportId: row.export_id });
      platform.metrics.repairs.inc({ repair: 'export_requeued' });
      logger.warn({ exportId: row.export_id, workerId: row.worker_id }, `export queued again: its ${whatHappened(row.worker_id, lost)}`);
    }
  }

  for (const row of await platform.batches.listOrphaned(lost)) {
    if (await platform.batches.releaseOrphan(row, lost)) {
      await queue.add(batchQueue, { batchId: row.batch_id });
      platform.metrics.repairs.inc({ repair: 'batch_requeued' });
      logger.warn({ batchId: row.batch_id, workerId: row.worker_id }, `batch queued again (it goes on from its first line not answered): its ${whatHappened(row.worker_id, lost)}`);
    }
  }

  await releaseLostEvaluations(platform, lost);

  // A Tinker run held its weights in its worker's memory: what it learnt since its last save is gone with it.
  for (const run of await platform.tinker.listLostRuns(lost)) {
    const error = `the ${whatHappened(run.worker_id, lost)} holding this training run at step ${run.step}; the weights since its last save are lost: load a saved state (create_training_client_from_state) to go on`;
    if (await platform.tinker.updateRun(run.run_id, { status: 'failed', error }, ['running'], run.worker_id ?? undefined)) {
      await platform.tinker.failUnfinished(run.run_id, { error, category: 'server' });
      platform.metrics.repairs.inc({ repair: 'tinker_run_failed' });
      logger.warn({ runId: run.run_id, workerId: run.worker_id }, `tinker run failed: its ${whatHappened(run.worker_id, lost)}`);
    }
  }

  // A sweep's state is in its rows and its study, not in its holder: whoever takes it next goes on from there.
  for (const row of await platform.sweeps.listOrphaned(lost)) {
    if (await platform.sweeps.releaseOrphan(row, lost)) {
      await queue.add(sweepQueue, { sweepId: row.sweep_id });
      platform.metrics.repairs.inc({ repair: 'sweep_requeued' });
      logger.warn({ sweepId: row.sweep_id, workerId: row.worker_id }, `sweep queued again (it goes on from its recorded trials): its ${whatHappened(row.worker_id, lost)}`);
    }
  }

  for (const row of await platform.datasets.listProcessingOrphaned(lost)) {
    // It starts over on whichever worker takes it; its llm_api_key stays sealed until then.
    if (await platform.datasets.releaseProcessing(row, lost)) {
      await queue.add(augmentQueue, { processedDatasetId: row.processed_dataset_id });
      platform.metrics.repairs.inc({ repair: 'dataset_requeued' });
      logger.warn({ processedDatasetId: row.processed_dataset_id, workerId: row.worker_id }, `dataset processing queued again: its ${whatHappened(row.worker_id, lost)}`);
    }
  }
}

/** Evaluations whose worker's hold is lost: queued again to start over, or failed once MAX_EVALUATION_ATTEMPTS workers
 *  were lost on them. */
async function releaseLostEvaluations(platform: Platform, lost: LostHold): Promise<void> {
  const { evaluationRuns, logger } = platform;
  for (const row of await evaluationRuns.listOrphaned(lost)) {
    const again = row.attempts < MAX_EVALUATION_ATTEMPTS;
    const to = again ? { status: 'queued' as const } : { status: 'failed' as const, error: evaluationLost(row.worker_id, row.attempts) };
    if (!(await evaluationRuns.releaseOrphan(row, to, lost))) continue;
    if (again) {
      await evaluationRuns.appendEvent(row.evaluation_id, 'log', { level: 'warning', message: `queued again to start over: the ${whatHappened(row.worker_id, lost)} (attempt ${row.attempts} of ${MAX_EVALUATION_ATTEMPTS})` });
      await platform.queue.add(benchmarkQueue, { evaluationId: row.evaluation_id });
    } else {
      await platform.secrets.drop(row.evaluation_id);
    }
    platform.metrics.repairs.inc({ repair: again ? 'evaluation_requeued' : 'evaluation_failed' });
    logger.warn({ evaluationId: row.evaluation_id, workerId: row.worker_id, attempts: row.attempts }, `evaluation ${again ? 'queued again' : 'failed'}: its ${whatHappened(row.worker_id, lost)}`);
  }
}

/** Fails or re-queues the work of dead workers, forgets them, and deletes expired secrets. */
export async function recoverOrphans(platform: Platform, options: RecoveryOptions = {}): Promise<void> {
  const timeoutS = platform.config.WORKER_TIMEOUT_S;
  if (options.everyWorkerGone) await platform.workers.removeAll();
  await releaseLostWork(platform, { kind: 'silent', timeoutS });
  await platform.workers.removeSilent(timeoutS);
  await platform.secrets.sweepExpired();
}

/** Work the in-process queue held when its process stopped: queued jobs, exports, evaluations … not yet taken, re-added
 *  from the rows in order. A durable queue (Redis) still has them. */
export async function requeuePending(platform: Platform): Promise<void> {
  if (platform.queue.durable) return;
  for (const job of await platform.jobs.listByStatus(['queued'])) await platform.queue.add(trainingQueue, { jobId: job.job_id });
  for (const row of await platform.exports.listRunning()) {
    if (row.worker_id === null) await platform.queue.add(exportQueue, { exportId: row.export_id });
  }
  for (const row of await platform.datasets.listProcessingPending()) await platform.queue.add(augmentQueue, { processedDatasetId: row.processed_dataset_id });
  for (const row of await platform.batches.listWaiting()) await platform.queue.add(batchQueue, { batchId: row.batch_id });
  for (const row of await platform.evaluationRuns.listWaiting()) await platform.queue.add(benchmarkQueue, { evaluationId: row.evaluation_id });
  for (const runId of await listWaiting(platform.db, TINKER_WORK, 0)) await platform.queue.add(sessionQueue, { runId });
  for (const row of await platform.sweeps.listWaiting()) await platform.queue.add(sweepQueue, { sweepId: row.sweep_id });
}
