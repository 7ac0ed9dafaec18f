// Work a stopped worker had taken, which the queue drops unrun when this worker finds it stalled (BullMQ): the rows
// decide what runs again (the watchdog and the reconciler), so this worker says at info level which work it was and
// what became of it, instead of logging another worker's death as an error of its own.
import type { Platform } from '@ftp/platform';
import type { QueueName } from '@ftp/jobs/queues';

/** A row's state as the watchdog and the reconciler see it. */
interface RowState {
  status: string;
  workerId: string | null;
  waiting: boolean;
  held: boolean;
  error?: string | null;
}

const rowLanes: Partial<Record<QueueName, { idOf(payload: Record<string, string>): string | undefined; read(platform: Platform, id: string): Promise<RowState | undefined> }>> = {
  train: {
    idOf: (p) => p.jobId,
    read: async (platform, id) => {
      const row = await platform.jobs.getForWorker(id);
      return row && { status: row.status, workerId: row.worker_id, waiting: row.status === 'queued', held: row.status === 'preparing' || row.status === 'training', error: row.error };
    },
  },
  export: {
    idOf: (p) => p.exportId,
    read: async (platform, id) => {
      const row = await platform.exports.getForWorker(id);
      return row && { status: row.status, workerId: row.worker_id, waiting: row.status === 'running' && !row.worker_id, held: row.status === 'running' && !!row.worker_id, error: row.message };
    },
  },
  benchmark: {
    idOf: (p) => p.evaluationId,
    read: async (platform, id) => {
      const row = await platform.evaluationRuns.getForWorker(id);
      return row && { status: row.status, workerId: row.worker_id, waiting: row.status === 'queued', held: row.status === 'running', error: row.error };
    },
  },
  augment: {
    idOf: (p) => p.processedDatasetId,
    read: async (platform, id) => {
      const row = await platform.datasets.getForWorker(id);
      return row && { status: row.status, workerId: row.worker_id, waiting: row.status === 'processing' && !row.worker_id, held: row.status === 'processing' && !!row.worker_id, error: row.error };
    },
  },
};

async function whatBecameOfIt(platform: Platform, row: RowState | undefined): Promise<string> {
  if (!row) return 'it no longer exists';
  if (row.waiting) return 'it is queued again (the reconciler or the watchdog re-queued it)';
  if (!row.held) return `it is already ${row.status}${row.error ? ` (${row.error})` : ''}`;
  const timeoutS = platform.config.WORKER_TIMEOUT_S;
  if ((await platform.workers.live(timeoutS)).some((w) => w.worker_id === row.workerId)) return `it runs on ${row.workerId}`;
  return `the watchdog fails it or queues it again once ${row.workerId} has been silent ${timeoutS} s`;
}

/** Logs the dropped work of `queue` at info level, naming it and what became of its row. */
export async function noteStalledWork(platform: Platform, queue: string, payload: unknown): Promise<void> {
  const lane = rowLanes[queue as QueueName];
  const id = lane?.idOf((payload ?? {}) as Record<string, string>);
  if (!lane || !id) {
    platform.logger.info({ queue }, `${queue} request of a stopped worker dropped by the queue; its caller was told to try again`);
    return;
  }
  const outcome = await whatBecameOfIt(platform, await lane.read(platform, id));
  platform.logger.info({ queue, id }, `${queue} work ${id} of a stopped worker was dropped by the queue; ${outcome}`);
}
