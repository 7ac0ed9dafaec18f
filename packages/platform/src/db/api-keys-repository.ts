// API keys for AUTH_MODE=token. Only a SHA-256 hash of each key is stored: keys are 32 random bytes,
// so a fast hash is enough (there is nothing to brute-force), and a lookup stays one indexed query.
import { createHash, randomBytes } from 'node:crypto';
import type { Database, Queryable } from './database.ts';
import { newId } from '../ids.ts';

export interface ApiKeyRow {
  key_id: string;
  user_id: string;
  name: string;
  created_at: Date;
  revoked_at: Date | null;
}

const KEY_PREFIX = 'ftp_';
/** Advisory lock key of the first-key creation ("ftp_key" in ASCII); never changes. */
const FIRST_KEY_LOCK = '28838473610519929';

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export class ApiKeysRepository {
  constructor(private readonly db: Database) {}

  /** Creates a key; the plain key is returned once and never stored. */
  async create(userId: string, name: string, db: Queryable = this.db): Promise<{ key: string; row: ApiKeyRow }> {
    const key = KEY_PREFIX + randomBytes(32).toString('base64url');
    const [row] = await db.query<ApiKeyRow>(
      `INSERT INTO api_keys (key_id, user_id, name, key_hash) VALUES ($1, $2, $3, $4)
       RETURNING key_id, user_id, name, created_at, revoked_at`,
      [newId('key'), userId, name, hashApiKey(key)],
    );
    return { key, row: row! };
  }

  /** Creates a key only when no live key exists, under a transaction-scoped advisory lock: processes that start
   *  together on one database make one first key between them, not one each. Undefined when keys existed. */
  async createFirst(userId: string, name: string): Promise<{ key: string; row: ApiKeyRow } | undefined> {
    return this.db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [FIRST_KEY_LOCK]);
      const [live] = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys WHERE revoked_at IS NULL');
      return live!.n > 0 ? undefined : this.create(userId, name, tx);
    });
  }

  /** The user a live key belongs to, or undefined for an unknown or revoked key. */
  async userForKey(key: string): Promise<string | undefined> {
    const [row] = await this.db.query<{ user_id: string }>(
      'SELECT user_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
      [hashApiKey(key)],
    );
    return row?.user_id;
  }

  async revoke(keyId: string): Promise<boolean> {
    const rows = await this.db.query(
      'UPDATE api_keys SET revoked_at = now() WHERE key_id = $1 AND revoked_at IS NULL RETURNING key_id',
      [keyId],
    );
    return rows.length > 0;
  }

  async list(): Promise<ApiKeyRow[]> {
    return this.db.query<ApiKeyRow>(
      'SELECT key_id, user_id, name, created_at, revoked_at FROM api_keys ORDER BY created_at',
    );
  }

  async countLive(): Promise<number> {
    const [row] = await this.db.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys WHERE revoked_at IS NULL');
    return row?.n ?? 0;
  }
}
