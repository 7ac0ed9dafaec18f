// Batches (/v1/batches, OpenAI's Batch API): the batch row, taken by a worker as an export is (claim, release when its
// worker is gone), and one batch_results row per line answered. A line's row is written once (its primary key is the
// line), so a batch resumed on another worker, or one whose results were written twice, never answers a line twice.
import type { Database, Queryable } from './database.ts';
import type { WebhooksRepository } from './webhooks-repository.ts';
import { guardedUpdate, type Bind } from './guarded-update.ts';
import { holdLost, listLostHolds, type LostHold, type WorkTable } from './work-rows.ts';

export type BatchStatus = 'validating' | 'in_progress' | 'finalizing' | 'cancelling' | 'completed' | 'failed' | 'cancelled' | 'expired';
export const UNFINISHED_BATCH: readonly BatchStatus[] = ['validating', 'in_progress', 'finalizing', 'cancelling'];
const UNFINISHED_SQL = `status IN (${UNFINISHED_BATCH.map((s) => `'${s}'`).join(', ')})`;

export const BATCH_WORK: WorkTable = { table: 'batches', idColumn: 'batch_id', waiting: `${UNFINISHED_SQL} AND worker_id IS NULL`, held: `${UNFINISHED_SQL} AND worker_id IS NOT NULL` };

export interface BatchError {
  code: string;
  message: string;
  param: string | null;
  line: number | null;
}

export interface BatchRow {
  batch_id: string;
  user_id: string;
  endpoint: string;
  input_file_id: string;
  completion_window: string;
  metadata: Record<string, string> | null;
  status: BatchStatus;
  errors: BatchError[] | null;
  /** Lines in the input file (0 until validated). */
  total: number;
  output_file_id: string | null;
  error_file_id: string | null;
  worker_id: string | null;
  created_at: Date;
  in_progress_at: Date | null;
  finalizing_at: Date | null;
  completed_at: Date | null;
  failed_at: Date | null;
  cancelling_at: Date | null;
  cancelled_at: Date | null;
  expired_at: Date | null;
  expires_at: Date;
  updated_at: Date;
}

/** A batch with its lines answered so far, as the API shows it. */
export interface BatchWithCounts extends BatchRow {
  completed: number;
  failed: number;
}

/** One line's entry in the output (ok) or error file. */
export interface BatchResultRow {
  line: number;
  custom_id: string;
  ok: boolean;
  result: Record<string, unknown>;
}

type BatchUpdate = Partial<Pick<BatchRow, 'status' | 'errors' | 'total' | 'output_file_id' | 'error_file_id' | 'worker_id' | 'in_progress_at' | 'finalizing_at' | 'completed_at' | 'failed_at' | 'cancelled_at' | 'expired_at'>>;
const JSON_COLUMNS = new Set(['errors', 'metadata']);
const WITH_COUNTS = `SELECT b.*,
  (SELECT count(*) FROM batch_results r WHERE r.batch_id = b.batch_id AND r.ok)::int AS completed,
  (SELECT count(*) FROM batch_results r WHERE r.batch_id = b.batch_id AND NOT r.ok)::int AS failed
  FROM batches b`;

export class BatchesRepository {
  constructor(
    private readonly db: Database,
    private readonly webhooks: WebhooksRepository,
  ) {}

  async insert(row: Pick<BatchRow, 'batch_id' | 'user_id' | 'endpoint' | 'input_file_id' | 'completion_window' | 'metadata' | 'expires_at'>): Promise<BatchWithCounts> {
    const [created] = await this.db.query<BatchRow>(
      `INSERT INTO batches (batch_id, user_id, endpoint, input_file_id, completion_window, metadata, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6::json, $7) RETURNING *`,
      [row.batch_id, row.user_id, row.endpoint, row.input_file_id, row.completion_window, row.metadata === null ? null : JSON.stringify(row.metadata), row.expires_at],
    );
    return { ...created!, completed: 0, failed: 0 };
  }

  /** The caller's batch, with its counts. */
  async get(userId: string, batchId: string): Promise<BatchWithCounts | undefined> {
    const [row] = await this.db.query<BatchWithCounts>(`${WITH_COUNTS} WHERE b.batch_id = $1 AND b.user_id = $2`, [batchId, userId]);
    return row;
  }

  /** The caller's batches, newest first. */
  async list(userId: string): Promise<BatchWithCounts[]> {
    return this.db.query<BatchWithCounts>(`${WITH_COUNTS} WHERE b.user_id = $1 ORDER BY b.created_at DESC, b.batch_id DESC`, [userId]);
  }

  /** The caller's unfinished batches whose input is file `fileId`, oldest first (a worker may still read it). */
  async listUnfinishedReading(userId: string, fileId: string): Promise<BatchRow[]> {
    return this.db.query<BatchRow>(
      `SELECT * FROM batches WHERE user_id = $1 AND input_file_id = $2 AND ${UNFINISHED_SQL} ORDER BY created_at, batch_id`,
      [userId, fileId],
    );
  }

  /** Worker side: the batch the queue named, whoever owns it. */
  async getForWorker(batchId: string): Promise<BatchRow | undefined> {
    const [row] = await this.db.query<BatchRow>('SELECT * FROM batches WHERE batch_id = $1', [batchId]);
    return row;
  }

  /** Unfinished batches no worker holds, oldest first (the in-process queue's entries after a restart). */
  async listWaiting(): Promise<BatchRow[]> {
    return this.db.query<BatchRow>(`SELECT * FROM batches WHERE ${BATCH_WORK.waiting} ORDER BY created_at, batch_id`);
  }

  /** A worker takes a batch no worker holds; undefined when it is finished, gone or already taken. */
  async claim(batchId: string, workerId: string): Promise<BatchRow | undefined> {
    return this.apply(batchId, { worker_id: workerId }, () => ['worker_id IS NULL']);
  }

  /** Updates an unfinished batch (with `onlyWorker`, only while that worker holds it). */
  async update(batchId: string, update: BatchUpdate, onlyWorker?: string): Promise<BatchRow | undefined> {
    return this.apply(batchId, update, (bind) => (onlyWorker === undefined ? [] : [`worker_id = ${bind(onlyWorker)}`]));
  }

  /** The caller asks an unfinished batch to stop: it is `cancelling` until a worker writes what was answered. */
  async requestCancel(userId: string, batchId: string): Promise<BatchRow | undefined> {
    const [row] = await this.db.query<BatchRow>(
      `UPDATE batches SET status = 'cancelling', cancelling_at = now(), updated_at = now()
       WHERE batch_id = $1 AND user_id = $2 AND status IN ('validating', 'in_progress') RETURNING *`,
      [batchId, userId],
    );
    return row;
  }

  /** Records answered lines; a line already recorded keeps its first answer. */
  async addResults(batchId: string, results: readonly BatchResultRow[]): Promise<void> {
    if (results.length === 0) return;
    await this.db.query(
      `INSERT INTO batch_results (batch_id, line, custom_id, ok, result)
       SELECT $1, r.line, r.custom_id, r.ok, r.result FROM json_to_recordset($2::json) AS r(line integer, custom_id text, ok boolean, result json)
       ON CONFLICT (batch_id, line) DO NOTHING`,
      [batchId, JSON.stringify(results)],
    );
  }

  /** The lines of the batch answered so far. */
  async answeredLines(batchId: string): Promise<Set<number>> {
    const rows = await this.db.query<{ line: number }>('SELECT line FROM batch_results WHERE batch_id = $1', [batchId]);
    return new Set(rows.map((r) => r.line));
  }

  /** Every answered line, in input order. */
  async results(batchId: string): Promise<BatchResultRow[]> {
    return this.db.query<BatchResultRow>('SELECT line, custom_id, ok, result FROM batch_results WHERE batch_id = $1 ORDER BY line', [batchId]);
  }

  /** Unfinished batches held by a worker whose hold is lost (work-rows.ts). */
  async listOrphaned(lost: LostHold): Promise<BatchRow[]> {
    return listLostHolds<BatchRow>(this.db, BATCH_WORK, lost);
  }

  /** Hands an orphaned batch back to the queue, only while it is still on that worker and its hold is still lost. */
  async releaseOrphan(row: BatchRow, lost: LostHold): Promise<BatchRow | undefined> {
    return this.apply(row.batch_id, { worker_id: null }, (bind) => [`worker_id = ${bind(row.worker_id)}`, holdLost(BATCH_WORK, lost, bind)]);
  }

  /** The update; a batch's end (completed, failed, expired, cancelled) also writes OpenAI's webhook event for it
   *  (batch.<status>) in the same transaction (#42). */
  private apply(batchId: string, update: BatchUpdate, where: (bind: Bind) => string[]): Promise<BatchRow | undefined> {
    const run = (db: Queryable) =>
      guardedUpdate<BatchRow>(db, {
        table: 'batches', idColumn: 'batch_id', id: batchId, set: update, jsonColumns: JSON_COLUMNS,
        where: (bind) => [UNFINISHED_SQL, ...where(bind)],
      });
    const status = update.status;
    if (status === undefined || UNFINISHED_BATCH.includes(status)) return run(this.db);
    return this.db.transaction(async (tx) => {
      const row = await run(tx);
      if (row) await this.webhooks.recordEvent(tx, row.user_id, `batch.${status}`, { id: row.batch_id });
      return row;
    });
  }
}
