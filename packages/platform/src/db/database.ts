// The metadata store: one small interface over PGlite (embedded, in DATA_DIR/pglite, this file) and a
// PostgreSQL server (postgres.ts). Plain SQL with $n parameters; migrations are the .sql files in ../../migrations.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import { migrate } from './migrations.ts';

export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

export interface Database extends Queryable {
  /** Runs `fn` in one transaction; it commits when `fn` resolves and rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  check(): Promise<void>;
  close(): Promise<void>;
}

const CREATE_CLUSTER = fileURLToPath(new URL('./create-cluster.mjs', import.meta.url));

/** A metadata store needs little cache; Postgres' defaults (128 MB shared buffers) would triple the
 *  server's memory for nothing. */
const PGLITE_OPTIONS: PGliteOptions = {
  postgresqlconf: ['shared_buffers=16MB', 'wal_buffers=1MB', 'work_mem=4MB', 'maintenance_work_mem=16MB', 'temp_buffers=2MB'],
};

/** Runs initdb in a child process when `dataDir` holds no cluster yet (see create-cluster.mjs). */
async function ensureCluster(dataDir: string): Promise<void> {
  if (await fs.stat(path.join(dataDir, 'PG_VERSION')).then(() => true, () => false)) return;
  await promisify(execFile)(process.execPath, [CREATE_CLUSTER, dataDir, JSON.stringify(PGLITE_OPTIONS)], { timeout: 120_000 });
}

/** The embedded database's folder is held by another live process (the running stack, say). */
export class DataFolderInUse extends Error {
  constructor(readonly folder: string, readonly ownerPid: number) {
    super(`the data folder ${folder} is in use by process ${ownerPid}; stop it first`);
    this.name = 'DataFolderInUse';
  }
}

/** PGlite has a single owner and nothing stops a second process from opening the same folder and
 *  corrupting it, so the owner holds `<dataDir>.lock` with its pid; a lock whose process is gone is taken over. */
async function acquireOwnerLock(dataDir: string): Promise<() => Promise<void>> {
  const lockFile = `${dataDir}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await fs.writeFile(lockFile, String(process.pid), { flag: 'wx' });
      return () => fs.rm(lockFile, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(await fs.readFile(lockFile, 'utf8').catch(() => ''));
      if (owner && owner !== process.pid && isAlive(owner)) {
        throw new DataFolderInUse(path.dirname(dataDir), owner);
      }
      await fs.rm(lockFile, { force: true });
    }
  }
  throw new Error(`cannot take the lock ${lockFile}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

class PgliteDatabase implements Database {
  constructor(
    private readonly pg: PGlite,
    private readonly releaseLock: () => Promise<void>,
  ) {}

  async query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.pg.query<T>(sql, params)).rows;
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.pg.transaction((tx) =>
      fn({ query: async <R>(sql: string, params: unknown[] = []) => (await tx.query<R>(sql, params)).rows }),
    );
  }

  async check(): Promise<void> {
    await this.pg.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.pg.close();
    await this.releaseLock();
  }

  async execScript(sql: string): Promise<void> {
    await this.pg.exec(sql);
  }
}

/** Opens (creating if needed) the embedded database in `dataDir` and brings its schema up to date. */
export async function openEmbeddedDatabase(dataDir: string): Promise<Database> {
  await fs.mkdir(dataDir, { recursive: true });
  const releaseLock = await acquireOwnerLock(dataDir);
  let pg: PGlite;
  try {
    await ensureCluster(dataDir);
    pg = await PGlite.create(dataDir, PGLITE_OPTIONS);
  } catch (err) {
    await releaseLock();
    throw err;
  }
  const db = new PgliteDatabase(pg, releaseLock);
  try {
    await migrate(db, (sql) => db.execScript(sql));
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}
