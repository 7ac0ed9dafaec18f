// A Tinker run with no call for TINKER_IDLE_S (1 s here) saves its state, weights and Adam's, and lets its worker go;
// its next call queues it again, and the worker that takes it loads that state: the official SDK's loop sees nothing
// but the losses of a run that was never let go (within 1e-5), on the tiny model. And a seq_id that never arrives holds
// back the later calls for TINKER_SEQ_GAP_S (1 s here) only: the run skips it, and it fails if it is sent after all.
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { IDLE_STATE } from '@ftp/jobs/tinker';
import { startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';
import { buildTinkerApp } from '../src/app.ts';
import { runPython, SDK_PYTHON } from './sdk/run.ts';

let h: TrainingHarness;
let app: FastifyInstance;
let baseUrl: string;

beforeAll(async () => {
  h = await startTrainingHarness({ TINKER_IDLE_S: '1', TINKER_SEQ_GAP_S: '1', HF_ENDPOINT: 'http://127.0.0.1:9' });
  app = await buildTinkerApp(h.platform);
  await app.listen({ host: '127.0.0.1', port: 0 });
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}, 120_000);
afterAll(async () => {
  await app?.close();
  await h?.close();
});

it('a run let go when idle continues from its saved state as if it had never stopped', async () => {
  const { code, stdout, stderr } = await runPython(SDK_PYTHON, ['services/tinker/test/sdk/idle.py', baseUrl, 'tml-anything', 'tiny', '3']);
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

/** A POST as the SDK makes it, over HTTP; its JSON answer. */
async function post(route: string, body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await fetch(`${baseUrl}/api/v1/${route}`, { method: 'POST', headers: { 'x-api-key': 'tml-anything', 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Record<string, any>;
}

/** retrieve_future until the call is done or failed. */
async function settled(requestId: string): Promise<Record<string, any>> {
  for (;;) {
    const answer = await post('retrieve_future', { request_id: requestId, allow_metadata_only: true });
    if (answer.type !== 'try_again') return answer;
  }
}

it('a seq_id that never arrives holds the later calls back for TINKER_SEQ_GAP_S, then the run goes on without it', async () => {
  const { session_id } = await post('create_session', { tags: [], user_metadata: {}, sdk_version: '0.38.0' });
  const created = await post('create_model', { session_id, model_seq_id: 0, base_model: 'tiny', lora_config: { rank: 4, seed: 0 } });
  const step = (seq_id: number) => post('optim_step', { model_id: created.model_id, seq_id, type: 'optim_step', adam_params: { learning_rate: 1e-3 } });
  const first = await step(1);
  expect(await settled(created.request_id)).toEqual({ model_id: created.model_id });
  expect(await settled(first.request_id)).toHaveProperty('metrics');

  // seq_id 2 is never sent (the SDK gave up submitting it): 3 runs once it has waited longer than 1 s for it.
  const sent = Date.now();
  const third = await step(3);
  expect(await settled(third.request_id)).toHaveProperty('metrics');
  expect(Date.now() - sent).toBeGreaterThanOrEqual(1_000);
  const run = async () => (await h.platform.tinker.getRunByModel('local', created.model_id))!;
  // (the worker records where the run is just after it answers the call)
  await expect.poll(async () => (await run()).next_seq_id).toBe(4);

  // Sent after all, it is a failed future of category user saying why; a resend of either is answered from its row.
  const late = await step(2);
  expect(await settled(late.request_id)).toEqual({ category: 'user', error: expect.stringMatching(/^seq_id 2 arrived after the training run went on without it: .*waited 1 s for it \(TINKER_SEQ_GAP_S\), so the run skipped it$/) });
  expect((await step(2)).request_id).toBe(late.request_id);
  expect((await step(3)).request_id).toBe(third.request_id);

  // The run goes on in order from there.
  const fourth = await step(4);
  expect(await settled(fourth.request_id)).toHaveProperty('metrics');
  await expect.poll(run).toMatchObject({ next_seq_id: 5, step: 3 });
  await post(`sessions/${session_id}/finish`, {});
}, 120_000);
