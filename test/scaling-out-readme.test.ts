// README.md's "Without Docker, on one Debian machine" stays what the tests run: PostgreSQL, Redis and SeaweedFS
// started with the programs and arguments test/servers starts them with (for the section's folders and ports), every
// process given the variables the scaled-out tests give theirs, and each started with the package script that runs
// the entry point those tests start.
import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES, loadConfig } from '@ftp/platform';
import path from 'node:path';
import { serverArgs, WEED } from './servers/servers.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const readme = await fs.readFile(`${ROOT}README.md`, 'utf8');
const scripts = (JSON.parse(await fs.readFile(`${ROOT}package.json`, 'utf8')) as { scripts: Record<string, string> }).scripts;
const section = readme.slice(readme.indexOf('### Without Docker, on one Debian machine'), readme.indexOf('\n## ', readme.indexOf('### Without Docker')));

/** Arguments as a shell line reads them ('' for an empty one; none of them needs other quoting). */
const shell = (args: readonly string[]) => args.map((a) => (a === '' ? "''" : a)).join(' ');

const S3_KEY = 'ftp';
const S3_SECRET = 'change-me-to-a-long-random-secret';

/** The variables the section's `export` line sets. */
function exported(): Record<string, string> {
  const line = /^export ((?:.*\\\n)*.*)$/m.exec(section)?.[1] ?? '';
  return Object.fromEntries([...line.replace(/\\\n/g, ' ').matchAll(/([A-Z][A-Z0-9_]*)=(\S+)/g)].map((m) => [m[1]!, m[2]!]));
}

describe('README: scaling out without Docker', () => {
  it('starts PostgreSQL, Redis and SeaweedFS with the arguments the tests start them with', () => {
    // PostgreSQL as the postgres user (as test/servers does as root), its socket in its own folder.
    expect(section).toContain(`sudo -u postgres $PGBIN/initdb ${shell(serverArgs.initdb('/srv/ftp/postgres'))}\n`);
    expect(section).toContain(`sudo -u postgres $PGBIN/postgres ${shell(serverArgs.postgres('/srv/ftp/postgres', 5432, '/srv/ftp/postgres'))} &\n`);
    expect(section).toContain('sudo chown postgres: /srv/ftp/postgres');
    expect(section).toContain(`redis-server ${shell(serverArgs.redis('/srv/ftp/redis', 6379))} &\n`);
    expect(section).toContain(`echo '${JSON.stringify(serverArgs.s3Identity(S3_KEY, S3_SECRET))}' > /srv/ftp/s3.json\n`);
    // The weed bootstrap installed (test/servers' WEED), its volume server off the console's 8080.
    expect(section).toContain(`WEED=$PWD/${path.relative(ROOT, WEED)} `);
    expect(section).toContain(`$WEED ${shell(serverArgs.seaweedfs('/srv/ftp/seaweedfs', 8333, '/srv/ftp/s3.json', 8081))} &\n`);
    expect(serverArgs.seaweedfs('/d', 8333, '/c', 8081)).not.toContain('-volume.port=8080');
  });

  it('counts the services right and says how to stop and restart each server', () => {
    expect(readme).not.toMatch(/four HTTP services/);
    expect(readme).toContain('the five HTTP services');
    for (const stop of ['$PGBIN/pg_ctl -D /srv/ftp/postgres stop', 'redis-cli -p 6379 shutdown', 'pkill -f "$WEED server"']) expect(section).toContain(stop);
  });

  it('gives every process the variables the scaled-out tests give theirs, pointing at those servers', () => {
    const env = exported();
    // What test/servers/scaled-env.ts sets, but the Redis key prefix (a test's own; the default serves one deployment)
    // and the worker's metrics port (per worker, on its own line); and the operator's METRICS_TOKEN, as the scaled-out
    // test sets it.
    expect(Object.keys(env).sort()).toEqual(['AUTH_MODE', 'DATABASE_URL', 'METRICS_TOKEN', 'REDIS_URL', 'S3_ACCESS_KEY_ID', 'S3_BUCKET', 'S3_ENDPOINT', 'S3_SECRET_ACCESS_KEY', 'SECRETS_KEY']);
    expect(Object.keys(env).filter((k) => !CONFIG_VARIABLES.includes(k))).toEqual([]);
    expect(env.METRICS_TOKEN).toBe('$(openssl'); // `$(openssl rand -hex 24)`: 48 hex characters, made where it runs
    const config = loadConfig({ ...env, SECRETS_KEY: Buffer.alloc(32).toString('base64'), METRICS_TOKEN: 'f'.repeat(48) });
    expect(new URL(config.DATABASE_URL!).host).toBe('127.0.0.1:5432');
    expect(new URL(config.REDIS_URL!).host).toBe('127.0.0.1:6379');
    expect(new URL(config.S3_ENDPOINT!).host).toBe('127.0.0.1:8333');
    expect([config.S3_ACCESS_KEY_ID, config.S3_SECRET_ACCESS_KEY]).toEqual([S3_KEY, S3_SECRET]);
    expect(config.AUTH_MODE).toBe('token');
    expect(section).toContain('created one for user "local" (shown once):'); // what platform.ts prints with the first key
  });

  it('starts each service and worker with the script that runs the entry point the scaled-out tests start', () => {
    for (const service of ['preprocessing', 'training', 'export', 'inference', 'openai', 'console']) {
      expect(section).toContain(`pnpm start:${service}`);
      expect(scripts[`start:${service}`]).toBe(`tsx services/${service}/src/server.ts`);
    }
    expect(section).toContain('pnpm start:worker');
    expect(scripts['start:worker']).toBe('tsx services/worker/src/main.ts');
    expect(section).toContain('pnpm models add');
  });
});
