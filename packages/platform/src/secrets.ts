// Credentials a job needs at run time (hub_token, a tracker's api_key, llm_api_key) cross processes sealed:
// AES-256-GCM with SECRETS_KEY, the owner's id (job, export or request) as additional data so a sealed value
// cannot be moved to another owner, stored in the `secrets` table with an expiry (SECRET_TTL_S). The API seals
// at submit; the worker that runs the work opens it and drops it when the work ends. No process holds a secret
// between requests, and no row, queue payload, spec file, log line or artifact carries one in clear.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Config } from './env.ts';
import type { Database } from './db/database.ts';

export interface JobSecretValues {
  hubToken?: string | undefined;
  trackerApiKey?: string | undefined;
  llmApiKey?: string | undefined;
}

const FORMAT = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;

/** `v1.<iv>.<tag>.<ciphertext>`, base64url parts. */
export function seal(key: Buffer, ownerId: string, plaintext: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(ownerId, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [FORMAT, iv, cipher.getAuthTag(), body].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

/** Throws when the value was not sealed for `ownerId` with `key` (or was altered). */
export function unseal(key: Buffer, ownerId: string, sealed: string): string {
  const [format, iv, tag, body] = sealed.split('.');
  if (format !== FORMAT || !iv || !tag || body === undefined) throw new Error('not a sealed secret of this version');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(ownerId, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
}

/** SECRETS_KEY (32 bytes, base64); unset in the embedded default, one is generated into DATA_DIR/secrets.key
 *  (mode 0600) on first start and read from there afterwards. Scaled out it is required (env.ts says so). */
export async function loadSecretsKey(config: Config): Promise<Buffer> {
  if (config.SECRETS_KEY) return decodeKey(config.SECRETS_KEY, 'SECRETS_KEY');
  const file = path.join(config.dataDir, 'secrets.key');
  const existing = await fs.readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (existing !== undefined) return decodeKey(existing.trim(), file);
  await fs.mkdir(config.dataDir, { recursive: true });
  const key = randomBytes(KEY_BYTES);
  try {
    await fs.writeFile(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return decodeKey((await fs.readFile(file, 'utf8')).trim(), file); // another process wrote it first
  }
}

export function decodeKey(text: string, where: string): Buffer {
  const key = Buffer.from(text, 'base64');
  if (key.length !== KEY_BYTES) throw new Error(`${where} must be ${KEY_BYTES} random bytes in base64 (openssl rand -base64 32)`);
  return key;
}

export class SealedSecrets {
  constructor(
    private readonly db: Database,
    private readonly key: Buffer,
    private readonly ttlSeconds: number,
  ) {}

  /** `plaintext` sealed for `ownerId`, to be kept in a row of its own (a webhook endpoint's signing secret, which
   *  never expires): this key, no table. */
  sealValue(ownerId: string, plaintext: string): string {
    return seal(this.key, ownerId, plaintext);
  }

  /** What sealValue sealed for `ownerId`. */
  openValue(ownerId: string, sealed: string): string {
    return unseal(this.key, ownerId, sealed);
  }

  /** The same secrets read and written through `db` (a worker's database that waits out outages). */
  withDatabase(db: Database): SealedSecrets {
    return new SealedSecrets(db, this.key, this.ttlSeconds);
  }

  /** Seals the values that are set; nothing is stored when none is. Replaces what `ownerId` had. */
  async put(ownerId: string, values: JobSecretValues): Promise<void> {
    const present = Object.fromEntries(Object.entries(values).filter(([, v]) => typeof v === 'string' && v !== ''));
    if (Object.keys(present).length === 0) return;
    await this.db.query(
      `INSERT INTO secrets (owner_id, sealed, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
       ON CONFLICT (owner_id) DO UPDATE SET sealed = EXCLUDED.sealed, expires_at = EXCLUDED.expires_at`,
      [ownerId, seal(this.key, ownerId, JSON.stringify(present)), this.ttlSeconds],
    );
  }

  /** The owner's values; undefined when it has none, they expired, or they were sealed with another key. */
  async open(ownerId: string): Promise<JobSecretValues | undefined> {
    const [row] = await this.db.query<{ sealed: string }>('SELECT sealed FROM secrets WHERE owner_id = $1 AND expires_at > now()', [ownerId]);
    if (!row) return undefined;
    try {
      return JSON.parse(unseal(this.key, ownerId, row.sealed)) as JobSecretValues;
    } catch {
      return undefined;
    }
  }

  async drop(ownerId: string): Promise<void> {
    await this.db.query('DELETE FROM secrets WHERE owner_id = $1', [ownerId]);
  }

  /** Deletes expired rows; returns how many. */
  async sweepExpired(): Promise<number> {
    return (await this.db.query('DELETE FROM secrets WHERE expires_at <= now() RETURNING owner_id')).length;
  }
}
