// A resource's event log (a training job's, an evaluation's): rows numbered 1, 2, … per resource, read in order after a
// sequence number, so a stream resumes where its client stopped. One writer per number: several writers of one
// resource (a worker's core events, the reconciler, a cancel) may read the same last number at once on a server, and
// the one whose number was taken takes the next.
import type { Queryable } from './database.ts';

/** Where one kind of resource keeps its log: the table and the column naming the resource. */
export interface EventLogTable {
  table: string;
  idColumn: string;
}

export interface EventLogRow {
  seq: number;
  kind: string;
  data: Record<string, unknown>;
  created_at: Date;
}

/** Adds an event after the resource's last, through `db` (a transaction's, or a repository's). */
export async function appendLogEvent(db: Queryable, log: EventLogTable, id: string, kind: string, data: Record<string, unknown>): Promise<void> {
  const { table, idColumn } = log;
  for (let attempt = 1; ; attempt++) {
    const added = await db.query(
      `INSERT INTO ${table} (${idColumn}, seq, kind, data)
       VALUES ($1, (SELECT coalesce(max(seq), 0) + 1 FROM ${table} WHERE ${idColumn} = $1), $2, $3::json)
       ON CONFLICT (${idColumn}, seq) DO NOTHING RETURNING seq`,
      [id, kind, JSON.stringify(data)],
    );
    if (added.length > 0) return;
    if (attempt === 100) throw new Error(`${id}: 100 writers took the next event number before this one`);
  }
}

/** The resource's events in order, after sequence number `afterSeq`. */
export async function readLogEvents<Row extends EventLogRow>(db: Queryable, log: EventLogTable, id: string, afterSeq = 0): Promise<Row[]> {
  return db.query<Row>(`SELECT * FROM ${log.table} WHERE ${log.idColumn} = $1 AND seq > $2 ORDER BY seq`, [id, afterSeq]);
}
