// A user's rows a page at a time, newest first (created_at, then the id): the list endpoints' `limit` and `after`.
import type { Queryable } from './database.ts';

/** At most `limit` of `userId`'s rows of `table`, those after the row `after` names in that order (an id that is not
 *  the caller's gives the first page, as an unknown cursor does); `hasMore` says whether a next page exists. `table`
 *  and `id` are this package's own names, never a caller's. */
export async function newestFirstPage<T>(db: Queryable, table: string, id: string, userId: string, page: { after?: string | undefined; limit: number }): Promise<{ rows: T[]; hasMore: boolean }> {
  const rows = await db.query<T>(
    `SELECT * FROM ${table} r WHERE r.user_id = $1 AND ($2::text IS NULL
       OR NOT EXISTS (SELECT 1 FROM ${table} a WHERE a.user_id = $1 AND a.${id} = $2)
       OR (r.created_at, r.${id}) < (SELECT a.created_at, a.${id} FROM ${table} a WHERE a.user_id = $1 AND a.${id} = $2))
     ORDER BY r.created_at DESC, r.${id} DESC LIMIT $3`,
    [userId, page.after ?? null, page.limit + 1],
  );
  return { rows: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
}
