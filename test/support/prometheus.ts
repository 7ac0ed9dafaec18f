// A real Prometheus (Debian's `prometheus` package, its own process on a free loopback port, not the packaged service)
// scraping the given /metrics endpoints every second, and its HTTP query API. A machine without it fails the test
// that needs it, saying how to install it (scripts/test.sh installs it).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../servers/servers.ts';

export interface ScrapeTarget {
  job: string;
  /** host:port */
  address: string;
  bearer?: string;
}

export interface Prometheus {
  url: string;
  /** The instant vector of a PromQL expression: each series' labels and value. */
  query(expr: string): Promise<Array<{ metric: Record<string, string>; value: number }>>;
  /** The sum of an expression's values now (0 when it has no series). */
  sum(expr: string): Promise<number>;
  stop(): Promise<void>;
}

const BINARY = process.env.PROMETHEUS_BIN ?? '/usr/bin/prometheus';

export async function startPrometheus(targets: ScrapeTarget[]): Promise<Prometheus> {
  await fs.access(BINARY).catch(() => {
    throw new Error(`${BINARY} is missing: install Debian's prometheus package (scripts/test.sh does), or set PROMETHEUS_BIN`);
  });
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-prometheus-'));
  const scrapes = targets.map((target) => [
    `  - job_name: ${JSON.stringify(target.job)}`,
    '    scrape_interval: 1s',
    '    scrape_timeout: 1s',
    ...(target.bearer ? ['    authorization:', '      type: Bearer', `      credentials: ${JSON.stringify(target.bearer)}`] : []),
    `    static_configs: [{ targets: [${JSON.stringify(target.address)}] }]`,
  ].join('\n'));
  await fs.writeFile(path.join(home, 'prometheus.yml'), `global:\n  evaluation_interval: 1s\nscrape_configs:\n${scrapes.join('\n')}\n`);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(BINARY, [
    `--config.file=${path.join(home, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(home, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => (errors = (errors + chunk.toString()).slice(-4000)));
  const deadline = Date.now() + 60_000;
  while (!(await fetch(`${url}/-/ready`).then((r) => r.ok, () => false))) {
    if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}):\n${errors}`);
    if (Date.now() > deadline) throw new Error(`prometheus was not ready within 60 s:\n${errors}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const query = async (expr: string) => {
    const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await res.json()) as { status: string; error?: string; data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
    if (body.status !== 'success') throw new Error(`prometheus refused ${expr}: ${body.error}`);
    return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  };
  return {
    url,
    query,
    sum: async (expr) => (await query(expr)).reduce((total, series) => total + series.value, 0),
    async stop() {
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
      await fs.rm(home, { recursive: true, force: true });
    },
  };
}
