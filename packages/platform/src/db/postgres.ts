// PostgreSQL driver of the metadata store (scaled out): a pg.Pool behind the same Database interface as PGlite,
// the same migration files, and rows with the same JavaScript types, so repositories cannot tell the drivers apart.
import pg from 'pg';
import { isNetworkErrorCode, ServiceUnavailable } from '../errors.ts';
import type { Database, Queryable } from './database.ts';
import { migrate } from './migrations.ts';

export interface PostgresOptions {
  poolSize?: number;
}

/** Session advisory lock held while migrating ("ftp_mig" in ASCII). Arbitrary, but it must never change: every
 *  process of every version has to queue on the same key. Advisory locks are per database, so deployments sharing
 *  a server do not wait on one another. */
const MIGRATIONS_LOCK_KEY = '28838473610652007';

/** Without a limit, connecting to a host that drops packets waits for the kernel's TCP timeout (minutes). */
const CONNECT_TIMEOUT_MS = 10_000;

const TEXT_ARRAY_OID = 1009;
type ParseText = (text: string) => unknown;

/** PGlite's int8 parser: a number while it is exact, a BigInt beyond 2^53. */
function parseInt8(text: string): number | bigint {
  const n = BigInt(text);
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
}

/** PGlite's date parser: 'YYYY-MM-DD' read as UTC midnight, ±infinity as ±Infinity. */
function parseDate(text: string): Date | number {
  if (text === 'infinity') return Infinity;
  if (text === '-infinity') return -Infinity;
  return new Date(text);
}

/** An array of `parse`d elements: pg's text[] parser splits the literal (quotes, NULLs, nesting), then each element
 *  goes through the element parser. */
function arrayOf(parse: ParseText): ParseText {
  // pg's typings list only the scalar builtins, though getTypeParser knows the array types too.
  const parserFor = pg.types.getTypeParser as (oid: number, format: 'text') => (text: string) => unknown[];
  const splitArray = parserFor(TEXT_ARRAY_OID, 'text');
  const each = (value: unknown): unknown => (Array.isArray(value) ? value.map(each) : value === null ? null : parse(value as string));
  return (text) => each(splitArray(text));
}

/** Where pg's parsers differ from PGlite's (compared value by value against PGlite 0.5 and pg 8.23), PGlite's
 *  behaviour, so a row reads the same from both drivers:
 *  - int8 (20) and int8[] (1016): pg returns strings; PGlite numbers. bigint columns (raw_datasets.size_bytes) and
 *    count(*) are typed `number` in the repositories.
 *  - date (1082) and date[] (1182): pg reads a date as local midnight, PGlite as UTC midnight.
 *  - interval (1186) and interval[] (1187): pg returns an object, PGlite the text.
 *  Already the same, left alone: timestamptz/timestamp (Date), json/jsonb (parsed), int2/int4/float4/float8/oid
 *  (number), numeric (string), bool, text and the arrays of these. Left different: bytea (pg gives a Buffer, which
 *  is a Uint8Array; PGlite a plain Uint8Array) and geometric types (unused).
 *  Set on this pool only: pg.types is global and would change every other pg user in the process. */
const PGLITE_COMPATIBLE_PARSERS: Record<number, ParseText> = {
  20: parseInt8,
  1016: arrayOf(parseInt8),
  1082: parseDate,
  1182: arrayOf(parseDate),
  1186: (text) => text,
  1187: arrayOf((text) => text),
};

const pgliteCompatibleTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    (format !== 'binary' && PGLITE_COMPATIBLE_PARSERS[oid]) || pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** pg's own connection errors carry no code, only these messages (pg/lib/client.js, pg-pool/index.js). */
const PG_CONNECTION_MESSAGE = /^(Connection terminated|timeout expired|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/** True when `err` says the server cannot be reached or will not let us in, as opposed to a failing statement. */
function isConnectionFailure(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (isNetworkErrorCode(code)) return true;
    // SQLSTATE 08 connection exception, 28 invalid authorization, 3D000 no such database, 53300 too many
    // connections, 57P01-03 the server is shutting down or starting up.
    if (/^(08|28)/.test(code) || ['3D000', '53300', '57P01', '57P02', '57P03'].includes(code)) return true;
  }
  return PG_CONNECTION_MESSAGE.test(err.message);
}

/** host:port of a connection URL, and its password (to keep it out of messages). Throws without echoing the URL:
 *  the URL error of Node carries the whole input, password included. */
function parseServerAddress(url: string): { server: string; password: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error('the PostgreSQL URL is not a valid postgres://user:password@host:port/database URL');
  }
  // A Unix socket folder may be given as ?host=/path instead of a host name.
  const host = parsed.searchParams.get('host') ?? parsed.hostname;
  let password = parsed.password;
  try {
    password = decodeURIComponent(password); // pg sends it decoded, so that is how a message would show it
  } catch {
    // a stray '%': pg uses it as it stands
  }
  return { server: `${host || 'localhost'}:${parsed.port || '5432'}`, password };
}

type FailureMapper = (err: unknown) => never;

/** Rethrows connection failures as ServiceUnavailable('database') (a 503), and everything else unchanged. */
function connectionFailureMapper(server: string, password: string): FailureMapper {
  return (err) => {
    if (!isConnectionFailure(err)) throw err;
    const error = err as Error & { code?: string };
    let reason = error.message || error.code || 'connection failed';
    if (password) reason = reason.split(password).join('[redacted]');
    throw new ServiceUnavailable('database', `the database at ${server} is unreachable: ${reason}`);
  };
}

class PostgresDatabase implements Database {
  constructor(
    private readonly pool: pg.Pool,
    private readonly onFailure: FailureMapper,
  ) {}

  async query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    const result = await this.pool.query(sql, params).catch(this.onFailure);
    return result.rows as T[];
  }

  /** BEGIN … COMMIT on one client of the pool; ROLLBACK when `fn` throws. A client whose ROLLBACK failed is
   *  broken (connection lost mid-transaction) and is destroyed rather than handed to the next caller. */
  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect().catch(this.onFailure);
    const tx: Queryable = {
      query: async <R>(sql: string, params: unknown[] = []) => (await client.query(sql, params).catch(this.onFailure)).rows as R[],
    };
    let broken: Error | undefined;
    try {
      await tx.query('BEGIN');
      const result = await fn(tx);
      await tx.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw err;
    } finally {
      client.release(broken);
    }
  }

  async check(): Promise<void> {
    await this.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** Applies the migrations on one dedicated client holding the advisory lock: processes that start together
 *  queue on the lock, and each finds the files the first one applied already recorded. */
async function migrateUnderLock(pool: pg.Pool, onFailure: FailureMapper): Promise<void> {
  const client = await pool.connect().catch(onFailure);
  const run = async <R>(sql: string, params: unknown[] = []): Promise<R[]> => (await client.query(sql, params).catch(onFailure)).rows as R[];
  let broken: Error | undefined;
  try {
    await run('SELECT pg_advisory_lock($1::bigint)', [MIGRATIONS_LOCK_KEY]);
    try {
      // `migrate` sends whole `BEGIN; …; COMMIT;` scripts: a multi-statement simple query, fine on one pg client.
      await migrate({ query: run }, async (sql) => {
        await run(sql);
      });
    } finally {
      await run('SELECT pg_advisory_unlock($1::bigint)', [MIGRATIONS_LOCK_KEY]).catch((err: Error) => {
        broken = err; // the session is gone, and its lock with it
      });
    }
  } finally {
    client.release(broken);
  }
}

/** Opens a pool on the PostgreSQL server at `url` and brings its schema up to date. */
export async function openPostgresDatabase(url: string, options: PostgresOptions = {}): Promise<Database> {
  const { server, password } = parseServerAddress(url);
  const onFailure = connectionFailureMapper(server, password);
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true, // TCP keepalive: a connection a firewall or NAT dropped silently is noticed, not waited on
    types: pgliteCompatibleTypes,
  });
  // An idle client whose connection drops emits 'error' on the pool; unheard, that would end the process. The
  // pool discards that client, and the next query reconnects or reports the database unreachable.
  pool.on('error', () => undefined);
  try {
    await migrateUnderLock(pool, onFailure);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  return new PostgresDatabase(pool, onFailure);
}
