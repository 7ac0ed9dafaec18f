// The reconciler: the database is the truth, the queue only delivers. Each round (every long-lived process, on the
// watchdog's timer) compares the rows of work with the queue's entries and the workers' heartbeats and repairs what
// disagrees, each repair claimed by one process through a guarded UPDATE:
// - a row waiting for a worker that has no entry in the queue (Redis restarted without it, an add that failed):
//   queued again;
// - a row a live worker holds but no longer works on (its handler ended without finishing it): released as the
//   watchdog releases a dead worker's work (recovery.ts): resumed, failed saying so, or queued again;
// - an entry waiting in the queue whose row is finished or gone: removed, so no worker takes it;
// - a request (inference, evaluation, dry run) waiting past its time limit: its producer gave up or died, so nobody
//   wants its answer; removed;
// - an upload in parts (/v1/uploads) still pending past its time: expired, its parts removed.
// Together with the watchdog every such row is repaired within WORKER_TIMEOUT_S + 30 s.
import {
  BATCH_WORK, claimRequeue, DATASET_WORK, EVALUATION_WORK, EXPORT_WORK, listWaiting, removeUploadParts, SWEEP_WORK, TINKER_WORK, TRAINING_WORK, unfinished,
  type Config, type Platform, type QueueDefinition, type WorkTable,
} from '@ftp/platform';
import { augmentQueue, batchQueue, benchmarkQueue, evaluateQueue, exportQueue, inferQueue, preflightQueue, sessionQueue, sweepQueue, trainingQueue } from '../queues/index.ts';
import { releaseLostWork } from './recovery.ts';

/** A row just written waits this long for its queue entry before it counts as missing one. */
export const REQUEUE_GRACE_S = 10;
/** A live worker's heartbeats must leave out a row it holds for this long after the row last changed: a heartbeat
 *  lists the work at hand when it starts, so one sent just after a claim may not have it yet. */
export const LET_GO_MARGIN_S = 10;
/** A request is dropped this long after its producer's time limit ran out (at most the limit again), so its producer,
 *  which cancels it then, goes first even on a machine whose clock is a little behind. */
const REQUEST_MARGIN_MS = 30_000;

/** A queue whose work is a row: the row's table, and the payload naming it. */
interface RowLane<P> {
  queue: QueueDefinition<P, void>;
  work: WorkTable;
  idOf(payload: P): string;
  payloadFor(id: string): P;
  /** Appends to the row's history, where it has one (training jobs). */
  note?(platform: Platform, id: string, message: string): Promise<void>;
}

const lane = <P>(l: RowLane<P>): RowLane<unknown> => l as RowLane<unknown>;
const ROW_LANES: readonly RowLane<unknown>[] = [
  lane({
    queue: trainingQueue, work: TRAINING_WORK, idOf: (p) => p.jobId, payloadFor: (jobId) => ({ jobId }),
    note: (platform, jobId, message) => platform.jobs.appendEvent(jobId, 'log', { level: 'warning', message }),
  }),
  lane({ queue: sessionQueue, work: TINKER_WORK, idOf: (p) => p.runId, payloadFor: (runId) => ({ runId }) }),
  lane({ queue: sweepQueue, work: SWEEP_WORK, idOf: (p) => p.sweepId, payloadFor: (sweepId) => ({ sweepId }) }),
  lane({ queue: exportQueue, work: EXPORT_WORK, idOf: (p) => p.exportId, payloadFor: (exportId) => ({ exportId }) }),
  lane({ queue: augmentQueue, work: DATASET_WORK, idOf: (p) => p.processedDatasetId, payloadFor: (processedDatasetId) => ({ processedDatasetId }) }),
  lane({ queue: batchQueue, work: BATCH_WORK, idOf: (p) => p.batchId, payloadFor: (batchId) => ({ batchId }) }),
  lane({
    queue: benchmarkQueue, work: EVALUATION_WORK, idOf: (p) => p.evaluationId, payloadFor: (evaluationId) => ({ evaluationId }),
    note: (platform, evaluationId, message) => platform.evaluationRuns.appendEvent(evaluationId, 'log', { level: 'warning', message }),
  }),
];

/** Queues whose work answers a producer that waits at most its time limit. */
const REQUEST_LANES: ReadonlyArray<{ queue: QueueDefinition<unknown, unknown>; limitMs(config: Config): number }> = [
  { queue: inferQueue as QueueDefinition<unknown, unknown>, limitMs: (c) => c.INFERENCE_TIMEOUT_MS },
  { queue: evaluateQueue as QueueDefinition<unknown, unknown>, limitMs: (c) => c.INFERENCE_TIMEOUT_MS },
  { queue: preflightQueue as QueueDefinition<unknown, unknown>, limitMs: (c) => c.PREFLIGHT_TIMEOUT_MS },
];

/** One round: every lane compared with its rows and repaired. */
export async function reconcile(platform: Platform): Promise<void> {
  for (const rows of ROW_LANES) await reconcileRows(platform, rows);
  await releaseLostWork(platform, { kind: 'let-go', timeoutS: platform.config.WORKER_TIMEOUT_S, marginS: LET_GO_MARGIN_S });
  for (const requests of REQUEST_LANES) await dropAbandonedRequests(platform, requests.queue, requests.limitMs(platform.config));
  for (const upload of await platform.uploads.expire()) await removeUploadParts(platform, upload);
}

async function reconcileRows(platform: Platform, rows: RowLane<unknown>): Promise<void> {
  const { queue, db, logger } = platform;
  const entries = await queue.pending(rows.queue);
  const inQueue = new Set(entries.map((e) => rows.idOf(e.payload)));
  for (const id of await listWaiting(db, rows.work, REQUEUE_GRACE_S)) {
    if (inQueue.has(id) || !(await claimRequeue(db, rows.work, id, REQUEUE_GRACE_S))) continue;
    await rows.note?.(platform, id, 're-queued: its queue entry was lost (the queue restarted without it, or adding it failed)');
    await queue.add(rows.queue, rows.payloadFor(id));
    platform.metrics.repairs.inc({ repair: 'entry_requeued' });
    logger.warn({ queue: rows.queue.name, id }, 'work queued again: its row waited with no queue entry');
  }
  const waiting = entries.filter((e) => e.state === 'waiting');
  const live = await unfinished(db, rows.work, waiting.map((e) => rows.idOf(e.payload)));
  for (const entry of waiting) {
    const id = rows.idOf(entry.payload);
    if (!live.has(id) && (await queue.discard(rows.queue, entry.id))) {
      platform.metrics.repairs.inc({ repair: 'entry_removed' });
      logger.info({ queue: rows.queue.name, id }, 'queue entry removed: its row is finished or gone');
    }
  }
}

async function dropAbandonedRequests(platform: Platform, queue: QueueDefinition<unknown, unknown>, limitMs: number): Promise<void> {
  const before = Date.now() - limitMs - Math.min(REQUEST_MARGIN_MS, limitMs);
  for (const entry of await platform.queue.pending(queue)) {
    if (entry.state !== 'waiting' || entry.queuedAt.getTime() >= before) continue;
    if (await platform.queue.discard(queue, entry.id)) {
      platform.metrics.repairs.inc({ repair: 'request_dropped' });
      platform.logger.info({ queue: queue.name, id: entry.id, queuedAt: entry.queuedAt }, 'request removed from the queue: it waited past its time limit, so nobody waits for its answer');
    }
  }
}
