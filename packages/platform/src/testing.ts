// Test support (imported as '@ftp/platform/testing', never by production code): a real platform on a
// temp data folder, with every log line captured so tests can assert on what was (not) logged.
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { loadConfig } from './env.ts';
import { createLogger } from './logging.ts';
import { openEmbeddedDatabase } from './db/database.ts';
import { openPlatform, type Platform } from './platform.ts';

export interface TestPlatform extends Platform {
  dataDir: string;
  /** Every log line written so far, raw JSON text. */
  logText(): string;
}

const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));

/** A migrated, empty PGlite folder made once per migration set and copied per test: creating a
 *  PGlite cluster costs seconds, copying a template costs well under one. */
export async function pgliteTemplate(): Promise<string> {
  const hash = createHash('sha256');
  for (const file of (await fs.readdir(MIGRATIONS_DIR)).sort()) {
    hash.update(file).update(await fs.readFile(path.join(MIGRATIONS_DIR, file)));
  }
  const template = path.join(os.tmpdir(), `ftp-pglite-template-${hash.digest('hex').slice(0, 16)}`);
  if (await fs.stat(template).then(() => true, () => false)) return template;
  const building = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-pglite-build-'));
  const db = await openEmbeddedDatabase(building);
  await db.close();
  // Another test process may have won the race; either copy is a valid template.
  await fs.rename(building, template).catch(() => fs.rm(building, { recursive: true, force: true }));
  return template;
}

export async function openTestPlatform(env: Record<string, string> = {}): Promise<TestPlatform> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-test-'));
  await fs.cp(await pgliteTemplate(), path.join(dataDir, 'pglite'), { recursive: true });
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  // No GGUF made in the background after each job (minutes of CPU over a run, for chats most tests never have); the
  // tests of that feature, and the stacks the end-to-end tests start, keep it on.
  const config = loadConfig({ LOG_LEVEL: 'debug', PREPARE_GGUF_AFTER_TRAINING: 'false', ...env, DATA_DIR: dataDir });
  const platform = await openPlatform(config, { logger: createLogger({ level: config.LOG_LEVEL, destination }) });
  return {
    ...platform,
    dataDir,
    logText: () => chunks.join(''),
    async close() {
      await platform.close();
      await fs.rm(dataDir, { recursive: true, force: true });
    },
  };
}
