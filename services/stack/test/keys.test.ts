// `pnpm keys` while the stack runs: the embedded database is held, as the stack holds it (its owner lock), and the
// command says in one sentence what to do, not a Node stack trace (#54).
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEmbeddedDatabase, type Database } from '@ftp/platform';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
let dataDir: string;
let held: Database | undefined;

async function keys(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { DATABASE_URL: _scaledOut, ...inherited } = process.env;
  const env = { ...inherited, DATA_DIR: dataDir, AUTH_MODE: 'token' };
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'services/stack/src/keys.ts', ...args], { cwd: ROOT, env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-keys-'));
});
afterAll(async () => {
  await held?.close();
  await fs.rm(dataDir, { recursive: true, force: true });
});

describe('pnpm keys', () => {
  it('while the stack holds the embedded database: one sentence that says to stop it, exit 1', async () => {
    held = await openEmbeddedDatabase(path.join(dataDir, 'pglite'));
    const { code, stdout, stderr } = await keys('create', 'alice');
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe(`pnpm keys: the embedded database in ${dataDir} is held by the running stack (process ${process.pid}): stop it, run pnpm keys create alice again, then start it again (with DATABASE_URL, keys can be managed while it runs)\n`);
  }, 60_000);

  it('once the stack has stopped: creates the key', async () => {
    await held!.close();
    held = undefined;
    const { code, stdout } = await keys('create', 'alice');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^key_id \S+ for user alice \(shown once, store it now\):\n\S+\n$/);
  }, 60_000);
});
