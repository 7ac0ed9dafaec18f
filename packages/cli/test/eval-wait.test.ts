// `ftune eval` while the evaluation waits for a cold model: what the worker tells the job's log ("an evaluation
// waits: …", services/inference/test/inference.test.ts checks the worker writes it) comes out on stderr as it is
// written, and nothing the log held before the evaluation began (#39). The training and inference services are stood in
// for by a real HTTP server here that answers as they do: the job's events as server-sent events from Last-Event-ID,
// ending with `end`, and POST /evaluation answered once the log has had its lines.
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';

const FTUNE = fileURLToPath(new URL('../../../node_modules/.bin/ftune', import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const log: Array<{ message: string }> = [{ message: 'an evaluation waits: loading an older model: 5 s so far' }, { message: 'training job completed' }];
let server: http.Server;
let url: string;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    void (async () => {
      if (request.method === 'GET' && request.url === '/jobs/job_1/events') {
        const after = Number(request.headers['last-event-id'] ?? 0);
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        log.forEach((data, i) => {
          if (i + 1 > after) response.write(`id: ${i + 1}\nevent: log\ndata: ${JSON.stringify({ level: 'info', ...data, about: 'model' })}\n\n`);
        });
        response.end(`event: end\ndata: ${JSON.stringify({ job_id: 'job_1', status: 'completed' })}\n\n`);
      } else if (request.method === 'POST' && request.url === '/evaluation') {
        for (const seconds of [1, 2, 3]) {
          await sleep(1_000);
          log.push({ message: `an evaluation waits: loading job_1's model: ${seconds} s so far` });
          log.push({ message: 'something else the job heard' });
        }
        await sleep(2_500); // the last lines are read before the answer comes
        const result = { metrics: { exact_match: 0.5 }, num_samples: 2, dataset_id: 'pd_1', samples: [], warnings: [] };
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
      } else response.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"not found"}');
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

it('says what the evaluation waits for as the job’s log tells it, and nothing from before', async () => {
  const env = { ...process.env, HOME: os.tmpdir(), XDG_CONFIG_HOME: path.join(os.tmpdir(), 'ftune-eval-wait'), FTUNE_TRAINING_URL: url, FTUNE_INFERENCE_URL: url };
  const child = spawn(FTUNE, ['eval', 'job_1', '--dataset', 'pd_1'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise((resolve) => child.on('close', resolve));
  expect(code, stderr).toBe(0);
  expect(stdout).toMatch(/exact_match\s+│?\s*0\.5/);
  const waits = stderr.split('\n').filter((line) => line.startsWith('(waiting: '));
  expect(waits).toEqual([1, 2, 3].map((s) => `(waiting: loading job_1's model: ${s} s so far)`));
  expect(stderr).not.toContain('older model');
}, 30_000);
