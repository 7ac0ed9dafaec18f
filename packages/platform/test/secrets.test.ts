// Sealed secrets: AES-256-GCM bound to their owner, stored with an expiry, never in clear in the row; the key is
// SECRETS_KEY or one generated once into the data folder.
import fs from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPlatform, type TestPlatform } from '../src/testing.ts';
import { loadConfig, loadSecretsKey, SealedSecrets, seal, unseal } from '../src/index.ts';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await openTestPlatform();
});
afterAll(() => platform.close());

const TOKEN = 'hf_sealed_test_token_value_0123456789';

describe('sealed secrets', () => {
  it('round-trips, stores no clear text, and opens only for its owner and key', async () => {
    await platform.secrets.put('job_a', { hubToken: TOKEN, trackerApiKey: undefined });
    expect(await platform.secrets.open('job_a')).toEqual({ hubToken: TOKEN });
    const [row] = await platform.db.query<{ sealed: string }>('SELECT * FROM secrets WHERE owner_id = $1', ['job_a']);
    expect(JSON.stringify(row)).not.toContain(TOKEN);
    expect(row!.sealed).toMatch(/^v1\./);
    // Moved to another owner, or opened with another key: nothing.
    await platform.db.query('INSERT INTO secrets (owner_id, sealed, expires_at) VALUES ($1, $2, now() + interval \'1 hour\')', ['job_b', row!.sealed]);
    expect(await platform.secrets.open('job_b')).toBeUndefined();
    expect(await new SealedSecrets(platform.db, randomBytes(32), 60).open('job_a')).toBeUndefined();
    await platform.secrets.drop('job_a');
    expect(await platform.secrets.open('job_a')).toBeUndefined();
  });

  it('stores nothing when no value is set, and expired secrets neither open nor survive a sweep', async () => {
    await platform.secrets.put('job_empty', { hubToken: undefined, trackerApiKey: '' });
    expect(await platform.db.query('SELECT 1 FROM secrets WHERE owner_id = $1', ['job_empty'])).toEqual([]);
    await platform.secrets.put('job_old', { hubToken: TOKEN });
    await platform.db.query("UPDATE secrets SET expires_at = now() - interval '1 second' WHERE owner_id = 'job_old'");
    expect(await platform.secrets.open('job_old')).toBeUndefined();
    expect(await platform.secrets.sweepExpired()).toBeGreaterThanOrEqual(1);
    expect(await platform.db.query('SELECT 1 FROM secrets WHERE owner_id = $1', ['job_old'])).toEqual([]);
  });

  it('a tampered value does not open', () => {
    const key = randomBytes(32);
    const sealed = seal(key, 'owner', 'secret');
    expect(unseal(key, 'owner', sealed)).toBe('secret');
    const parts = sealed.split('.');
    parts[3] = Buffer.from('other').toString('base64url');
    expect(() => unseal(key, 'owner', parts.join('.'))).toThrow();
  });

  it('the embedded default generates a key once into the data folder (mode 0600); SECRETS_KEY must be 32 bytes', async () => {
    const config = loadConfig({ DATA_DIR: await fs.mkdtemp('/tmp/ftp-key-') });
    const first = await loadSecretsKey(config);
    expect(first).toHaveLength(32);
    expect((await fs.stat(`${config.dataDir}/secrets.key`)).mode & 0o777).toBe(0o600);
    expect((await loadSecretsKey(config)).equals(first)).toBe(true);
    await expect(loadSecretsKey(loadConfig({ DATA_DIR: config.dataDir, SECRETS_KEY: 'c2hvcnQ=' }))).rejects.toThrow(/SECRETS_KEY must be 32 random bytes/);
    await fs.rm(config.dataDir, { recursive: true, force: true });
  });

  it('scaled out, SECRETS_KEY is required: a process cannot make up a key the others do not have', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://db/ftp' })).toThrow(/SECRETS_KEY: is required with DATABASE_URL/);
  });
});
