// Evaluations with benchmarks (POST /evaluations): the row, taken by a worker as an export is (claim; the watchdog and
// the reconciler hand it back when its worker is gone), and its event log. Reads by id filter on user_id, so another
// user's evaluation reads exactly like an unknown one; the worker-side methods act on the one the queue named. Every
// status change writes its event to the log in the same transaction (and a completion its webhook event), whichever
// path made it: the worker, a cancel, the watchdog.
import type { Database, Queryable } from './database.ts';
import { newestFirstPage } from './pages.ts';
import { appendLogEvent, readLogEvents, type EventLogRow, type EventLogTable } from './event-log.ts';
import { guardedUpdate, type Bind } from './guarded-update.ts';
import { EVALUATION_WORK, holdLost, listLostHolds, type LostHold } from './work-rows.ts';
import type { WebhooksRepository } from './webhooks-repository.ts';
import type { EvaluationStatus } from '@ftp/schema';

/** The status enum of the API (@ftp/schema), as rows store it. */
export type { EvaluationStatus };
export const UNFINISHED_EVALUATION: readonly EvaluationStatus[] = ['queued', 'running'];

export interface EvaluationRunRow {
  evaluation_id: string;
  user_id: string;
  status: EvaluationStatus;
  /** The trained job whose model runs; null for a base model. */
  job_id: string | null;
  model_source: 'adapter' | 'merged' | 'base';
  checkpoint_step: number | null;
  /** A Tinker run's sampler weights (job_id the run's id); null otherwise. */
  checkpoint_name: string | null;
  base_model_id: string;
  /** The request as accepted, without hub_token (StoredEvaluationRequest). */
  request: Record<string, unknown>;
  results: Record<string, unknown> | null;
  base_results: Record<string, unknown> | null;
  error: string | null;
  worker_id: string | null;
  /** How many times a worker took it. */
  attempts: number;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  updated_at: Date;
}

export interface EvaluationRunEventRow extends EventLogRow {
  evaluation_id: string;
  kind: 'status' | 'log';
}

type NewEvaluationRun = Pick<EvaluationRunRow, 'evaluation_id' | 'user_id' | 'job_id' | 'model_source' | 'checkpoint_step' | 'base_model_id' | 'request'> & Partial<Pick<EvaluationRunRow, 'checkpoint_name'>>;
type EvaluationRunUpdate = Partial<Pick<EvaluationRunRow, 'status' | 'results' | 'base_results' | 'error' | 'worker_id' | 'finished_at'>>;
const JSON_COLUMNS = new Set(['request', 'results', 'base_results']);
const EVENTS: EventLogTable = { table: 'evaluation_run_events', idColumn: 'evaluation_id' };

export class EvaluationRunsRepository {
  constructor(
    private readonly db: Database,
    private readonly webhooks: WebhooksRepository,
  ) {}

  /** A new evaluation, queued, with its first event. */
  async insert(row: NewEvaluationRun): Promise<EvaluationRunRow> {
    return this.db.transaction(async (tx) => {
      const [created] = await tx.query<EvaluationRunRow>(
        `INSERT INTO evaluation_runs (evaluation_id, user_id, job_id, model_source, checkpoint_step, checkpoint_name, base_model_id, request)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::json) RETURNING *`,
        [row.evaluation_id, row.user_id, row.job_id, row.model_source, row.checkpoint_step, row.checkpoint_name ?? null, row.base_model_id, JSON.stringify(row.request)],
      );
      await appendLogEvent(tx, EVENTS, row.evaluation_id, 'status', { status: 'queued' });
      return created!;
    });
  }

  async get(userId: string, evaluationId: string): Promise<EvaluationRunRow | undefined> {
    const [row] = await this.db.query<EvaluationRunRow>('SELECT * FROM evaluation_runs WHERE user_id = $1 AND evaluation_id = $2', [userId, evaluationId]);
    return row;
  }

  /** Worker side: the evaluation the queue named, whoever owns it. */
  async getForWorker(evaluationId: string): Promise<EvaluationRunRow | undefined> {
    const [row] = await this.db.query<EvaluationRunRow>('SELECT * FROM evaluation_runs WHERE evaluation_id = $1', [evaluationId]);
    return row;
  }

  /** One page of the caller's evaluations, newest first. */
  listPage(userId: string, page: { after?: string | undefined; limit: number }): Promise<{ rows: EvaluationRunRow[]; hasMore: boolean }> {
    return newestFirstPage<EvaluationRunRow>(this.db, 'evaluation_runs', 'evaluation_id', userId, page);
  }

  /** The caller's queued or running evaluations of a job, oldest first (what the job's deletion must not pull from
   *  under them). */
  async listUnfinishedOfJob(userId: string, jobId: string): Promise<EvaluationRunRow[]> {
    return this.db.query<EvaluationRunRow>(
      "SELECT * FROM evaluation_runs WHERE user_id = $1 AND job_id = $2 AND status IN ('queued', 'running') ORDER BY created_at, evaluation_id",
      [userId, jobId],
    );
  }

  /** Queued evaluations, oldest first (the in-process queue's entries after a restart). */
  async listWaiting(): Promise<EvaluationRunRow[]> {
    return this.db.query<EvaluationRunRow>(`SELECT * FROM evaluation_runs WHERE ${EVALUATION_WORK.waiting} ORDER BY created_at, evaluation_id`);
  }

  /** A worker takes a queued evaluation (queued → running, one more attempt); undefined when it is no longer queued. */
  async claim(evaluationId: string, workerId: string): Promise<EvaluationRunRow | undefined> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx.query<EvaluationRunRow>(
        `UPDATE evaluation_runs SET status = 'running', worker_id = $2, attempts = attempts + 1, started_at = now(), updated_at = now()
         WHERE evaluation_id = $1 AND status = 'queued' RETURNING *`,
        [evaluationId, workerId],
      );
      if (row) await appendLogEvent(tx, EVENTS, evaluationId, 'status', { status: 'running' });
      return row;
    });
  }

  /** Updates a running evaluation while `workerId` holds it; undefined when it is no longer running there (cancelled,
   *  deleted, or taken from that worker). */
  async update(evaluationId: string, update: EvaluationRunUpdate, workerId: string): Promise<EvaluationRunRow | undefined> {
    return this.apply(evaluationId, update, (bind) => ["status = 'running'", `worker_id = ${bind(workerId)}`]);
  }

  /** Fails an evaluation still queued (its queue entry could not be added); undefined when it is no longer queued. */
  async failQueued(evaluationId: string, error: string): Promise<EvaluationRunRow | undefined> {
    return this.apply(evaluationId, { status: 'failed', error, finished_at: new Date() }, () => ["status = 'queued'"]);
  }

  /** The caller cancels a queued or running evaluation: cancelled at once (its worker, if any, stops the benchmark when
   *  its heartbeat reads the row); undefined when it was neither. */
  async cancel(userId: string, evaluationId: string): Promise<EvaluationRunRow | undefined> {
    return this.apply(evaluationId, { status: 'cancelled', finished_at: new Date() }, (bind) => [`user_id = ${bind(userId)}`, "status IN ('queued', 'running')"]);
  }

  /** Running evaluations whose worker's hold is lost (work-rows.ts). */
  async listOrphaned(lost: LostHold): Promise<EvaluationRunRow[]> {
    return listLostHolds<EvaluationRunRow>(this.db, EVALUATION_WORK, lost);
  }

  /** Hands an orphaned evaluation back to the queue, or fails it, only while it is still on that worker and its hold
   *  is still lost (so of several processes noticing, one acts). */
  async releaseOrphan(row: EvaluationRunRow, to: { status: 'queued' } | { status: 'failed'; error: string }, lost: LostHold): Promise<EvaluationRunRow | undefined> {
    const update: EvaluationRunUpdate = to.status === 'queued' ? { status: 'queued', worker_id: null } : { status: 'failed', error: to.error, finished_at: new Date() };
    return this.apply(row.evaluation_id, update, (bind) => [
      EVALUATION_WORK.held,
      row.worker_id === null ? 'worker_id IS NULL' : `worker_id = ${bind(row.worker_id)}`,
      holdLost(EVALUATION_WORK, lost, bind),
    ]);
  }

  /** Deletes the caller's evaluation unless it is queued or running; false when there was no such finished one. */
  async delete(userId: string, evaluationId: string): Promise<boolean> {
    const rows = await this.db.query(
      "DELETE FROM evaluation_runs WHERE user_id = $1 AND evaluation_id = $2 AND status NOT IN ('queued', 'running') RETURNING evaluation_id",
      [userId, evaluationId],
    );
    return rows.length > 0;
  }

  /** Deletes every evaluation of a job (any user's: its model is going); returns the ids removed of `userId`'s. */
  async deleteOfJob(userId: string, jobId: string): Promise<string[]> {
    const rows = await this.db.query<{ evaluation_id: string; user_id: string }>('DELETE FROM evaluation_runs WHERE job_id = $1 RETURNING evaluation_id, user_id', [jobId]);
    return rows.filter((r) => r.user_id === userId).map((r) => r.evaluation_id);
  }

  /** The evaluation's log in order, after sequence number `afterSeq`. */
  async events(evaluationId: string, afterSeq = 0): Promise<EvaluationRunEventRow[]> {
    return readLogEvents<EvaluationRunEventRow>(this.db, EVENTS, evaluationId, afterSeq);
  }

  async appendEvent(evaluationId: string, kind: EvaluationRunEventRow['kind'], data: Record<string, unknown>): Promise<void> {
    await appendLogEvent(this.db, EVENTS, evaluationId, kind, data);
  }

  /** The update; a status change also writes its event, and a completion its webhook event (evaluation.completed). */
  private async apply(evaluationId: string, update: EvaluationRunUpdate, where: (bind: Bind) => string[]): Promise<EvaluationRunRow | undefined> {
    const run = (db: Queryable) =>
      guardedUpdate<EvaluationRunRow>(db, { table: 'evaluation_runs', idColumn: 'evaluation_id', id: evaluationId, set: update, jsonColumns: JSON_COLUMNS, where });
    const status = update.status;
    if (!status) return run(this.db);
    return this.db.transaction(async (tx) => {
      const row = await run(tx);
      if (!row) return undefined;
      await appendLogEvent(tx, EVENTS, evaluationId, 'status', { status, ...(update.error ? { error: update.error } : {}) });
      if (status === 'completed') await this.webhooks.recordEvent(tx, row.user_id, 'evaluation.completed', { id: evaluationId, job_id: row.job_id });
      return row;
    });
  }
}
