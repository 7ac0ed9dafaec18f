// One UPDATE … SET … WHERE for the repositories whose rows move through states under guards (a job only while
// it is queued, an export only while a given worker holds it): the columns to set, then guards that bind their
// own values as parameters after them.
import type { Queryable } from './database.ts';

export type Bind = (value: unknown) => string;

export interface GuardedUpdate {
  table: string;
  idColumn: string;
  id: string;
  /** Columns to set; undefined values are left out. */
  set: Record<string, unknown>;
  /** Columns stored as json (their values are serialised and cast). */
  jsonColumns: ReadonlySet<string>;
  /** Extra WHERE conditions, joined with AND; `bind` adds a parameter and returns its placeholder. */
  where?: (bind: Bind) => string[];
  /** Whether updated_at moves (default true); false for what is recorded on a row without the row itself changing. */
  touch?: boolean;
}

/** Runs the update (touching updated_at unless `touch` is false) and returns the new row, or undefined when no row matched the guards. */
export async function guardedUpdate<Row>(db: Queryable, update: GuardedUpdate): Promise<Row | undefined> {
  const entries = Object.entries(update.set).filter(([, v]) => v !== undefined);
  const json = (k: string) => update.jsonColumns.has(k);
  const params: unknown[] = [update.id, ...entries.map(([k, v]) => (json(k) && v !== null ? JSON.stringify(v) : v))];
  const sets = entries.map(([k], i) => `${k} = $${i + 2}${json(k) ? '::json' : ''}`);
  const bind: Bind = (value) => `$${params.push(value)}`;
  const guards = [`${update.idColumn} = $1`, ...(update.where?.(bind) ?? [])].join(' AND ');
  const [row] = await db.query<Row>(`UPDATE ${update.table} SET ${[...sets, ...(update.touch === false ? [] : ['updated_at = now()'])].join(', ')} WHERE ${guards} RETURNING *`, params);
  return row;
}
