// README.md's "Without Docker, on one Debian machine" stays what the tests run: PostgreSQL, Redis and SeaweedFS
// started with the programs and arguments test/servers starts them with (for the section's folders and ports), every
// process given the variables the scaled-out tests give theirs, and each started with the package script that runs
// the entry point those tests start. And the section runs as written (#40): its blocks, in a bash with job control as
// in a terminal, inside network, mount and process namespaces of its own (CI runs as root), so its fixed ports, its
// /srv/ftp (a tmpfs there) and its `pkill` touch nothing outside: the servers, every service, the console and two
// workers, then a job trained and exported through them (test/support/recipe-driver.ts), then everything stopped as the
// section says.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES, loadConfig } from '@ftp/platform';
import path from 'node:path';
import { serverArgs, WEED } from './servers/servers.ts';
import { readmeBlocks } from './support/readme-blocks.ts';
import { tinyModelsDir, TINY_MODEL } from './support/tiny-model.ts';

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
    for (const service of ['preprocessing', 'training', 'export', 'inference', 'openai', 'tinker', 'console']) {
      expect(section).toContain(`pnpm start:${service}`);
      expect(scripts[`start:${service}`]).toBe(`tsx services/${service}/src/server.ts`);
    }
    expect(section).toContain('pnpm start:worker');
    expect(scripts['start:worker']).toBe('tsx services/worker/src/main.ts');
    expect(section).toContain('pnpm models add');
  });
});

/** The section's shell blocks, in order: the servers started, the servers stopped, the services and workers started. */
function sectionBlocks(): { servers: string; stop: string; services: string } {
  const start = readme.slice(0, readme.indexOf('### Without Docker, on one Debian machine')).split('\n').length;
  const end = start + section.split('\n').length;
  const blocks = readmeBlocks(readme).filter((b) => b.lang === 'sh' && b.line > start && b.line < end);
  expect(blocks.map((b) => b.skip)).toEqual([expect.stringContaining('scaling-out-readme.test.ts'), expect.stringContaining('scaling-out-readme.test.ts'), expect.stringContaining('scaling-out-readme.test.ts')]);
  return { servers: blocks[0]!.code, stop: blocks[1]!.code, services: blocks[2]!.code };
}

/** The bash script the namespaces run: the blocks as written, with what a reader does between them (waits for a
 *  server or a key to appear), the two placeholders filled, and the stopping the section describes in words (SIGTERM to
 *  each service and worker, `kill %n` in a terminal) before its stop block. */
function recipeScript(clone: string, modelsDir: string): string {
  const { servers, stop, services } = sectionBlocks();
  // The Debian packages are installed by scripts/test.sh (the same packages); apt-get here would reach for updates.
  const install = /^sudo apt-get install -y (.+?)\s+#/m.exec(servers);
  expect(install?.[1]?.split(' ')).toEqual(['postgresql', 'redis-server']);
  const serverLines = servers.split('\n').filter((line) => !line.startsWith('sudo apt-get install'));
  const serviceLines = services
    .replace('<model folder> <model_id>', `${path.join(modelsDir, TINY_MODEL)} ${TINY_MODEL}`)
    .split(/\n(?=\S)/); // a command per line, continuation lines (an indented export) kept with theirs
  expect(serviceLines[1]).toMatch(/^pnpm start:training 2>&1 \| tee training\.log &/);
  return [
    'set -m                        # job control, as in a terminal: each background job its own process group',
    'mount -t tmpfs tmpfs /srv     # this run\'s /srv',
    'ip link set lo up             # this run\'s loopback',
    `cd ${JSON.stringify(clone)}`,
    "step() { printf '\\n@@step %s@@\\n' \"$*\"; }",
    'step servers',
    ...serverLines,
    // What a reader waits for before the next block: each server answering.
    'for i in $(seq 120); do sudo -u postgres $PGBIN/pg_isready -q -h /srv/ftp/postgres -p 5432 && redis-cli -p 6379 ping >/dev/null 2>&1 && curl -s -o /dev/null 127.0.0.1:8333 && break; sleep 1; done',
    'before=" $(jobs -p | tr \'\\n\' \' \') "',
    'step services',
    serviceLines[0]!,
    serviceLines[1]!,
    // "start one service alone first and read its output": the first key, then the rest.
    "for i in $(seq 180); do grep -q 'shown once' training.log 2>/dev/null && break; sleep 1; done",
    ...serviceLines.slice(2),
    'step driver',
    `RECIPE_MODEL_ID=${TINY_MODEL} node --import tsx test/support/recipe-driver.ts; driven=$?`,
    'step stopping',
    // Each service and worker "stops on SIGTERM or Ctrl-C (kill %1 %2 … in that shell)": every job this block started.
    'started=""; for pid in $(jobs -p); do case "$before" in *" $pid "*) ;; *) started="$started $pid"; kill -TERM -- -$pid;; esac; done',
    'for pid in $started; do wait $pid; printf \'\\n@@stopped %s %s@@\\n\' $pid $?; done',
    ...stop.split('\n'),
    'wait',
    "printf '\\n@@listening %s@@\\n' \"$(ss -Hltn | wc -l)\"",
    'step done',
    'exit $driven',
  ].join('\n');
}

describe('README: scaling out without Docker, run as written', () => {
  it('starts the servers, every service, the console and two workers; trains and exports a job through them; stops it all', async () => {
    const clone = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-recipe-'));
    try {
      for (const entry of await fs.readdir(ROOT)) {
        if (!['.git', 'data', 'training.log'].includes(entry)) await fs.symlink(path.join(ROOT, entry), path.join(clone, entry));
      }
      const script = path.join(clone, 'recipe.sh');
      await fs.writeFile(script, recipeScript(clone, await tinyModelsDir()));
      // The environment of a shell of one's own: none of the deployment's variables (the section sets them).
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !CONFIG_VARIABLES.includes(k) && !k.startsWith('VITEST') && k !== 'NODE_OPTIONS'));
      const child = spawn('unshare', ['--net', '--mount', '--propagation', 'private', '--pid', '--fork', '--mount-proc', 'bash', '--noprofile', '--norc', script], { cwd: clone, env: { ...env, LOG_LEVEL: 'warn' } });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      const tail = output.slice(-12_000);
      const steps = [...output.matchAll(/@@step (\S+)@@/g)].map((m) => m[1]);
      expect(steps, tail).toEqual(['servers', 'services', 'driver', 'stopping', 'done']);
      const failed = /@@recipe-failed (.*)@@/.exec(output)?.[1];
      expect(failed, tail).toBeUndefined();
      const seen = JSON.parse(/@@recipe (.*)@@/.exec(output)?.[1] ?? 'null');
      console.log(`[recipe] ${JSON.stringify(seen)}; stopped: ${[...output.matchAll(/@@stopped \d+ (\d+)@@/g)].map((m) => m[1]).join(' ')}`);
      expect(seen, tail).toMatchObject({ workers: 2, job: 'completed', export: 'completed', console: 200 });
      expect(seen.adapter_bytes).toBeGreaterThan(0);
      expect(seen.adapter_bytes).toBe(seen.adapter_length);
      // Every service and worker stopped on its SIGTERM (the six services, the console and two workers: nine jobs), then the
      // servers on the section's stop lines: nothing listens any more, and the script ended.
      expect([...output.matchAll(/@@stopped \d+ (\d+)@@/g)], tail).toHaveLength(9);
      expect(/@@listening (\d+)@@/.exec(output)?.[1], tail).toBe('0');
      expect(code, tail).toBe(0);
    } finally {
      await fs.rm(clone, { recursive: true, force: true });
    }
  }, 600_000);
});
