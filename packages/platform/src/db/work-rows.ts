// What the kinds of rows a worker takes (training jobs, exports, datasets being augmented, evaluations) have in common for
// the watchdog and the reconciler: which rows wait for a worker, and when a worker's hold on a row no longer counts —
// the worker is silent (dead), or alive but no longer working on it (its handler ended without finishing the row).
// Each is an SQL predicate, so the same test both lists rows and guards the UPDATE that repairs one.
import type { Database } from './database.ts';
import type { Bind } from './guarded-update.ts';

export interface WorkTable {
  table: string;
  idColumn: string;
  /** SQL: the row waits in the queue for a worker. */
  waiting: string;
  /** SQL: a worker holds the row (worker_id is set) and it is not finished. */
  held: string;
}

export const TRAINING_WORK: WorkTable = { table: 'training_jobs', idColumn: 'job_id', waiting: "status = 'queued'", held: "status IN ('preparing', 'training')" };
export const EXPORT_WORK: WorkTable = { table: 'exports', idColumn: 'export_id', waiting: "status = 'running' AND worker_id IS NULL", held: "status = 'running' AND worker_id IS NOT NULL" };
export const EVALUATION_WORK: WorkTable = { table: 'evaluation_runs', idColumn: 'evaluation_id', waiting: "status = 'queued'", held: "status = 'running'" };
export const DATASET_WORK: WorkTable = {
  table: 'processed_datasets', idColumn: 'processed_dataset_id', waiting: "status = 'processing' AND worker_id IS NULL", held: "status = 'processing' AND worker_id IS NOT NULL",
};

/** Why a worker's hold on a row no longer counts: `silent`, no heartbeat for `timeoutS` (or no worker row at all);
 *  `let-go`, a live worker whose heartbeats, for `marginS` after the row last changed, do not list it among its work. */
export type LostHold = { kind: 'silent'; timeoutS: number } | { kind: 'let-go'; timeoutS: number; marginS: number };

/** SQL: `work`'s row has lost its worker's hold as `lost` says; `bind` adds the parameters. */
export function holdLost(work: WorkTable, lost: LostHold, bind: Bind): string {
  const t = work.table;
  const fresh = `w.heartbeat_at > now() - make_interval(secs => ${bind(lost.timeoutS)})`;
  if (lost.kind === 'silent') return `NOT EXISTS (SELECT 1 FROM workers w WHERE w.worker_id = ${t}.worker_id AND ${fresh})`;
  return `EXISTS (SELECT 1 FROM workers w WHERE w.worker_id = ${t}.worker_id AND ${fresh}
    AND w.heartbeat_at > ${t}.updated_at + make_interval(secs => ${bind(lost.marginS)}) AND NOT (w.current_jobs::jsonb ? ${t}.${work.idColumn}))`;
}

/** Held rows of `work` whose hold is lost, oldest change first. */
export async function listLostHolds<Row>(db: Database, work: WorkTable, lost: LostHold): Promise<Row[]> {
  const params: unknown[] = [];
  const bind: Bind = (value) => `$${params.push(value)}`;
  return db.query<Row>(`SELECT * FROM ${work.table} WHERE ${work.held} AND ${holdLost(work, lost, bind)} ORDER BY updated_at, ${work.idColumn}`, params);
}

/** Ids of the rows waiting for a worker unchanged for `graceS` (a row just queued may not be in the queue yet). */
export async function listWaiting(db: Database, work: WorkTable, graceS: number): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    `SELECT ${work.idColumn} AS id FROM ${work.table} WHERE ${work.waiting} AND updated_at < now() - make_interval(secs => $1) ORDER BY updated_at, ${work.idColumn}`,
    [graceS],
  );
  return rows.map((r) => r.id);
}

/** Claims the re-queueing of a waiting row: true for the one process whose UPDATE found it still waiting and
 *  unchanged for `graceS` (the update touches it, so the others find it changed). */
export async function claimRequeue(db: Database, work: WorkTable, id: string, graceS: number): Promise<boolean> {
  const rows = await db.query(
    `UPDATE ${work.table} SET updated_at = now() WHERE ${work.idColumn} = $1 AND ${work.waiting} AND updated_at < now() - make_interval(secs => $2) RETURNING ${work.idColumn}`,
    [id, graceS],
  );
  return rows.length > 0;
}

/** Of `ids`, those whose rows still wait for a worker or are held by one (the rest are finished or gone). */
export async function unfinished(db: Database, work: WorkTable, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.query<{ id: string }>(
    `SELECT ${work.idColumn} AS id FROM ${work.table} WHERE ${work.idColumn} = ANY($1) AND ((${work.waiting}) OR (${work.held}))`,
    [[...ids]],
  );
  return new Set(rows.map((r) => r.id));
}
