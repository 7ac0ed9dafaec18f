// A Tinker run with no call for TINKER_IDLE_S (1 s here) saves its state, weights and Adam's, and lets its worker go;
// its next call queues it again, and the worker that takes it loads that state: the official SDK's loop sees nothing
// but the losses of a run that was never let go (within 1e-5), on the tiny model.
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { IDLE_STATE } from '@ftp/jobs/tinker';
import { startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';
import { buildTinkerApp } from '../src/app.ts';

let h: TrainingHarness;
let app: FastifyInstance;
let baseUrl: string;

beforeAll(async () => {
  h = await startTrainingHarness({ TINKER_IDLE_S: '1', HF_ENDPOINT: 'http://127.0.0.1:9' });
  app = await buildTinkerApp(h.platform);
  await app.listen({ host: '127.0.0.1', port: 0 });
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}, 120_000);
afterAll(async () => {
  await app?.close();
  await h?.close();
});

it('a run let go when idle continues from its saved state as if it had never stopped', async () => {
  const child = spawn('test/tools/.venv/bin/python', ['services/tinker/test/sdk/idle.py', baseUrl, 'tml-anything', 'tiny', '3'], {
    env: { ...process.env, TINKER_TELEMETRY: '0', HF_HUB_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  expect(code, stderr.slice(-4000)).toBe(0);
  const seen = JSON.parse(stdout.trim().split('\n').at(-1)!) as { expected: number[]; got: number[]; model_id: string; base_before: Array<number | null>; base_after: Array<number | null> };
  // A base model's sampler let go and brought back by a sample answers as before (the sample is not taken for the
  // creation call a new run answers first).
  expect(seen.base_after).toHaveLength(seen.base_before.length);
  seen.base_after.forEach((v, i) => (v === null ? expect(seen.base_before[i]).toBeNull() : expect(Math.abs(v - seen.base_before[i]!)).toBeLessThanOrEqual(1e-6)));
  expect(seen.got).toHaveLength(6);
  seen.got.forEach((loss, i) => expect(Math.abs(loss - seen.expected[i]!) / seen.expected[i]!).toBeLessThanOrEqual(1e-5));
  // It did go: its idle state is stored, and the run that continued started from it.
  const run = (await h.platform.tinker.getRunByModel('local', seen.model_id))!;
  expect(run.config.from_state).toEqual({ run_id: run.run_id, name: IDLE_STATE, optimizer: true });
  expect(await h.platform.tinker.getCheckpoint('local', run.run_id, 'weights', IDLE_STATE)).toMatchObject({ step: expect.any(Number) });
  expect(run.step).toBe(6);
}, 300_000);
