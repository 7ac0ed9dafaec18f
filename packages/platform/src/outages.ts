// A worker waits out a server's outage instead of losing its work: a query or a blob call that fails because
// PostgreSQL or the S3 store is down (the drivers' ServiceUnavailable) is tried again with backoff for up to
// OUTAGE_RETRY_S, one log line per attempt, and past that fails with the reason. API processes do not wait (they
// answer 503 at once); a worker's processors do (withOutageRetries in platform.ts), so a job whose core finished
// during a restart still stores its model and completes. Each outage, once over, is told to listeners once.
import { createReadStream, ReadStream } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceUnavailable } from './errors.ts';
import type { Logger } from './logging.ts';
import type { Database } from './db/database.ts';
import type { BlobStore } from './blobs/blob-store.ts';

export type OutageStore = 'database' | 'storage';

/** One outage as this process lived it. */
export interface Outage {
  store: OutageStore;
  startedAt: Date;
  seconds: number;
  /** Failed attempts, all calls together. */
  attempts: number;
  /** The first failure's message. */
  reason: string;
}

/** True for the drivers' "the server is down" errors, as opposed to a failing statement or a missing blob. */
export function isOutage(err: unknown): err is ServiceUnavailable {
  return err instanceof ServiceUnavailable && (err.dependency === 'database' || err.dependency === 'storage');
}

const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 5000;

export class OutageRetry {
  private readonly open = new Map<OutageStore, { startedAt: number; attempts: number; reason: string }>();
  private readonly listeners = new Set<(outage: Outage) => void>();

  constructor(
    private readonly windowMs: number,
    private readonly logger: Logger,
    /** Told of each retry (metrics: ftp_retried_calls_total). */
    private readonly onRetry: (store: OutageStore) => void = () => undefined,
  ) {}

  /** Calls `listener` each time an outage ends (the first call that succeeds after failures); returns how to stop. */
  onRecovered(listener: (outage: Outage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Runs `call`, again while it fails because `store` is down, until it succeeds or the window has passed. */
  async run<T>(store: OutageStore, action: string, call: () => Promise<T>): Promise<T> {
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        const value = await call();
        this.recovered(store);
        return value;
      } catch (err) {
        if (!isOutage(err)) throw err;
        const elapsed = Date.now() - started;
        if (elapsed >= this.windowMs) {
          throw new ServiceUnavailable(store, `${err.message} (still failing after ${Math.round(elapsed / 1000)} s of retries, OUTAGE_RETRY_S)`);
        }
        const delay = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** (attempt - 1), this.windowMs - elapsed);
        this.failed(store, err.message);
        this.onRetry(store);
        this.logger.warn({ store, action, attempt, retryInMs: delay, reason: err.message }, `${store} unreachable, retrying`);
        await sleep(delay);
      }
    }
  }

  private failed(store: OutageStore, reason: string): void {
    const current = this.open.get(store);
    if (current) current.attempts += 1;
    else this.open.set(store, { startedAt: Date.now(), attempts: 1, reason });
  }

  private recovered(store: OutageStore): void {
    const ended = this.open.get(store);
    if (!ended) return;
    this.open.delete(store);
    const outage: Outage = { store, startedAt: new Date(ended.startedAt), seconds: Math.round((Date.now() - ended.startedAt) / 1000), attempts: ended.attempts, reason: ended.reason };
    this.logger.info({ ...outage }, `${store} reachable again; the writes that failed were retried`);
    for (const listener of this.listeners) {
      try {
        listener(outage);
      } catch (err) {
        this.logger.warn({ err }, 'an outage listener failed');
      }
    }
  }
}

/** `db` whose queries and transactions wait out outages (a transaction is rolled back, so it runs again whole). */
export function retryingDatabase(db: Database, retry: OutageRetry): Database {
  return {
    query: <T>(sql: string, params?: unknown[]) => retry.run('database', 'query', () => db.query<T>(sql, params)),
    transaction: (fn) => retry.run('database', 'transaction', () => db.transaction(fn)),
    check: () => db.check(),
    close: () => db.close(),
  };
}

type PutBody = Parameters<BlobStore['put']>[1];

/** A body that can be sent again: bytes, a string, or a local file (opened again); other streams go once. */
function resendable(body: PutBody): (() => PutBody) | undefined {
  if (typeof body === 'string' || body instanceof Uint8Array) return () => body;
  if (body instanceof ReadStream && typeof body.path === 'string') {
    const file = body.path;
    let first = true;
    return () => {
      if (first) return ((first = false), body);
      return createReadStream(file);
    };
  }
  return undefined;
}

/** `blobs` whose calls wait out outages of the storage. */
export function retryingBlobStore(blobs: BlobStore, retry: OutageRetry): BlobStore {
  const run = <T>(action: string, call: () => Promise<T>) => retry.run('storage', action, call);
  return {
    put(key, body) {
      const next = resendable(body);
      return next ? run(`storing ${key}`, () => blobs.put(key, next())) : blobs.put(key, body);
    },
    get: (key, range) => run(`reading ${key}`, () => blobs.get(key, range)),
    stat: (key) => run(`reading ${key}`, () => blobs.stat(key)),
    list: (prefix) => run(`listing ${prefix}`, () => blobs.list(prefix)),
    delete: (key) => run(`deleting ${key}`, () => blobs.delete(key)),
    deletePrefix: (prefix) => run(`deleting ${prefix}`, () => blobs.deletePrefix(prefix)),
    uri: (key) => blobs.uri(key),
    keyFromUri: (uri) => blobs.keyFromUri(uri),
    check: () => blobs.check(),
  };
}
