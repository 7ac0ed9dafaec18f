// Migrations: the .sql files in packages/platform/migrations, applied once each in file-name order, the same
// files on PGlite and on PostgreSQL. The PostgreSQL driver runs this under an advisory lock, so processes that
// start together apply each file exactly once.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Queryable } from './database.ts';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/** Applies every migration file not yet recorded, in file-name order, each in its own transaction. */
export async function migrate(db: Queryable, execScript: (sql: string) => Promise<void>): Promise<string[]> {
  await execScript(
    'CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
  );
  const done = new Set((await db.query<{ name: string }>('SELECT name FROM schema_migrations')).map((r) => r.name));
  const files = (await fs.readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql')).sort();
  const applied: string[] = [];
  for (const file of files) {
    if (done.has(file)) continue;
    const sql = await fs.readFile(path.join(MIGRATIONS_DIR, file), 'utf8');
    try {
      await execScript(`BEGIN;\n${sql}\nINSERT INTO schema_migrations (name) VALUES ('${file.replace(/'/g, "''")}');\nCOMMIT;`);
    } catch (err) {
      await execScript('ROLLBACK').catch(() => undefined);
      throw new Error(`migration ${file} failed: ${(err as Error).message}`, { cause: err });
    }
    applied.push(file);
  }
  return applied;
}
