// The official tinker SDK (0.38, locked in test/tools) runs a training loop of its own against this service and a real
// worker holding the run in the real core, on the tests' tiny model: twenty memorisation steps cut the loss by half or
// more, forward after them gives the same loss as the last step computed, samples come from the saved sampler weights
// (greedy equal through two samplers of the same weights, seeded ones reproducible), compute_logprobs agrees with
// forward's logprobs, and an unsupported loss is a failed future of category user naming it. Every path the SDK hit
// is recorded: none may be a 404 or 501 the README's "not supported" list does not name.
import { execFileSync, spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker, type WorkerHandle } from '@ftp/worker';
import { startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { buildOpenAiApp } from '@ftp/openai';
import { buildInferenceApp } from '@ftp/inference';
import { buildExportApp } from '@ftp/export';
import { buildTinkerApp } from '../src/app.ts';
import { runPython, SDK_ENV, SDK_PYTHON } from './sdk/run.ts';

let h: TrainingHarness;
let app: FastifyInstance;
let baseUrl: string;
let key: string;
const hits: Array<{ method: string; path: string; status: number }> = [];

const runSdk = (script: string, args: string[]) => runPython(SDK_PYTHON, [script, ...args]);

beforeAll(async () => {
  h = await startTrainingHarness({ AUTH_MODE: 'token', HF_ENDPOINT: 'http://127.0.0.1:9' });
  key = `tml-${(await h.platform.apiKeys.create('alice', 'a')).key}`;
  app = await buildTinkerApp(h.platform);
  app.addHook('onResponse', async (request, reply) => {
    hits.push({ method: request.method, path: request.routeOptions.url ?? request.url, status: reply.statusCode });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}, 120_000);
let second: WorkerHandle | undefined;
afterAll(async () => {
  await app?.close();
  await second?.stop();
  await h?.close();
});

let evaluated: string | undefined;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
let seen: Record<string, any>;
const seenLoop = () => seen;

describe('the tinker SDK’s own loop', () => {
  it('trains, saves and samples through the SDK unchanged', async () => {
    const { code, stdout, stderr } = await runSdk('services/tinker/test/sdk/loop.py', [baseUrl, key, 'tiny']);
    expect(code, stderr.slice(-4000)).toBe(0);
    seen = JSON.parse(stdout.trim().split('\n').at(-1)!);
  }, 300_000);

  it('twenty steps on one sequence cut its loss by half or more', () => {
    const [first, last] = [seen.losses[0], seen.losses.at(-1)];
    expect(last).toBeLessThan(first * 0.5);
    // forward after the last step: the weights the last optim_step made
    expect(seen.forward_loss).toBeLessThan(last);
  });

  it('compute_logprobs from the saved sampler weights equals forward’s logprobs of the same tokens', () => {
    expect(seen.prompt_logprobs[0]).toBeNull();
    const sampled = seen.prompt_logprobs.slice(1) as number[];
    expect(sampled).toHaveLength(seen.forward_logprobs.length);
    sampled.forEach((v, i) => expect(Math.abs(v - seen.forward_logprobs[i])).toBeLessThanOrEqual(1e-3));
  });

  it('a base model’s sampler gives the base model’s logprobs (those of a run before its first step)', () => {
    expect(seen.base_logprobs[0]).toBeNull();
    const base = seen.base_logprobs.slice(1) as number[];
    expect(base).toHaveLength(seen.untrained.length);
    base.forEach((v, i) => expect(Math.abs(v - seen.untrained[i])).toBeLessThanOrEqual(1e-3));
    // and not the trained run's
    expect(base.some((v, i) => Math.abs(v - seen.forward_logprobs[i]) > 1e-2)).toBe(true);
  });

  it('a sample’s logprobs are forward’s over the same tokens', () => {
    expect(seen.drawn_logprobs.length).toBeGreaterThan(0);
    expect(seen.drawn_forward).toHaveLength(seen.drawn_logprobs.length);
    seen.drawn_logprobs.forEach((v: number, i: number) => expect(Math.abs(v - seen.drawn_forward[i])).toBeLessThanOrEqual(1e-3));
  });

  it('samples: greedy the same through two samplers of the same weights, seeded ones reproducible', () => {
    expect(seen.greedy.length).toBeGreaterThan(0);
    expect(seen.again).toEqual(seen.greedy);
    expect(seen.seeded[0]).toEqual(seen.seeded[1]);
    expect(seen.state).toMatch(/^tinker:\/\/job_[0-9a-f]+\/weights\/after-20$/);
    expect(seen.named).toMatch(/^tinker:\/\/job_[0-9a-f]+\/sampler_weights\/final$/);
  });

  it('an unsupported loss (gspo) is a failed future of category user that names it', () => {
    expect(seen.refused.category.toLowerCase()).toContain('user');
    expect(seen.refused.message).toMatch(/loss_fn gspo is not supported here/);
  });

  it('its calls are Prometheus series: each call’s duration by operation and outcome, and its wait', async () => {
    const text = await h.platform.metrics.registry.metrics();
    const count = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    expect(count('ftp_tinker_call_duration_seconds_count{op="forward_backward",outcome="ok"}')).toBeGreaterThanOrEqual(20);
    expect(count('ftp_tinker_call_duration_seconds_count{op="optim_step",outcome="ok"}')).toBeGreaterThanOrEqual(20);
    expect(count('ftp_tinker_call_duration_seconds_count{op="forward_backward",outcome="user_error"}')).toBeGreaterThanOrEqual(1); // gspo
    expect(count('ftp_tinker_call_wait_seconds_count{op="sample"}')).toBeGreaterThanOrEqual(1);
  });

  it('every path the SDK hit is served', () => {
    const missing = hits.filter((h) => h.status === 404 || h.status === 501);
    expect(missing).toEqual([]);
    for (const path of ['/api/v1/create_model', '/api/v1/forward_backward', '/api/v1/optim_step', '/api/v1/asample', '/api/v1/retrieve_future']) {
      expect(hits.map((h) => h.path)).toContain(path);
    }
  });

  it('another user’s run, model and saved state read like unknown ones', async () => {
    const bob = { 'x-api-key': `tml-${(await h.platform.apiKeys.create('bob', 'b')).key}`, 'content-type': 'application/json' };
    const runId = /^tinker:\/\/([^/]+)\//.exec(seen.state)![1]!;
    const mine = await fetch(`${baseUrl}/api/v1/training_runs/${runId}`, { headers: { 'x-api-key': key } });
    expect(mine.status).toBe(200);
    expect(((await mine.json()) as { step: number }).step).toBe(20);
    // the list reads every run's last saved state and sampler weights in one query
    const listed = ((await (await fetch(`${baseUrl}/api/v1/training_runs`, { headers: { 'x-api-key': key } })).json()) as { training_runs: Array<Record<string, any>> }).training_runs;
    expect(listed.find((r) => r.training_run_id === runId)).toMatchObject({
      step: 20, last_checkpoint: { tinker_path: expect.stringMatching(/\/weights\//) }, last_sampler_checkpoint: { tinker_path: seen.named },
    });
    expect((await fetch(`${baseUrl}/api/v1/training_runs/${runId}`, { headers: bob })).status).toBe(404);
    expect((await fetch(`${baseUrl}/api/v1/get_info`, { method: 'POST', headers: bob, body: JSON.stringify({ model_id: seen.model_id }) })).status).toBe(404);
    expect((await fetch(`${baseUrl}/api/v1/weights_info`, { method: 'POST', headers: bob, body: JSON.stringify({ tinker_path: seen.state }) })).status).toBe(404);
    expect(((await (await fetch(`${baseUrl}/api/v1/training_runs`, { headers: bob })).json()) as { training_runs: unknown[] }).training_runs).toEqual([]);
  });
});

describe('sampler weights as a model', () => {
  it('/v1 chat serves tinker:<run>:<name>: the answer the SDK’s own sampler gives, on transformers', async () => {
    const runId = /^tinker:\/\/([^/]+)\//.exec(seen.named)![1]!;
    const openai = await buildOpenAiApp(h.platform);
    try {
      const ask = (model: string, fast: boolean, headers = { authorization: `Bearer ${key.slice(4)}` }) =>
        openai.inject({ method: 'POST', url: '/v1/chat/completions', headers, payload: { model, messages: [{ role: 'user', content: 'the capital of France' }], temperature: 0, max_tokens: 8, use_fast_engine: fast } });
      const slow = await ask(`tinker:${runId}:final`, false);
      expect(slow.statusCode, slow.body).toBe(200);
      expect(slow.json().choices[0].message.content).toBe(seen.chat_text);
      // The SDK's default LoRA adapts the output layer, which llama.cpp cannot apply here: a 400 that says so.
      const fast = await ask(`tinker:${runId}:final`, true);
      expect(fast.statusCode, fast.body).toBe(400);
      expect(fast.json().error).toMatchObject({ param: 'use_fast_engine', message: expect.stringContaining('adapts the output layer (train_unembed') });
      expect((await ask(`tinker:${runId}:never-saved`, false)).statusCode).toBe(404);
      const bob = { authorization: `Bearer ${(await h.platform.apiKeys.create('carol', 'c')).key}` };
      expect((await ask(`tinker:${runId}:final`, false, bob)).statusCode).toBe(404);
    } finally {
      await openai.close();
    }
  }, 240_000);
});

describe('sampler weights in inference, exports and evaluations (job_id the run, checkpoint_name the name)', () => {
  it('merged, they answer as the adapter on transformers and on llama.cpp; exported as adapter, GGUF and ONNX; evaluated', async () => {
    const runId = /^tinker:\/\/([^/]+)\//.exec(seen.named)![1]!;
    const headers = { authorization: `Bearer ${key.slice(4)}` };
    const [inference, exporter] = [await buildInferenceApp(h.platform), await buildExportApp(h.platform)];
    try {
      const batch = (body: Record<string, unknown>) => inference.inject({
        method: 'POST', url: '/inference/batch', headers,
        payload: { job_id: runId, checkpoint_name: 'final', messages: [[{ role: 'user', content: 'the capital of France' }]], max_new_tokens: 8, temperature: 0, ...body },
      });
      // Merging folds the output layer's LoRA into an output matrix of its own (the tiny model ties it to the embeddings).
      for (const body of [{ model_source: 'merged' }, { model_source: 'merged', use_fast_engine: true }]) {
        const res = await batch(body);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json().results[0], JSON.stringify(body)).toBe(seen.chat_text);
      }
      const fastAdapter = await batch({ model_source: 'adapter', use_fast_engine: true });
      expect(fastAdapter.statusCode, fastAdapter.body).toBe(422);
      expect(JSON.stringify(fastAdapter.json().detail)).toMatch(/adapts the output layer .* or model_source merged/);
      const unknown = await batch({ checkpoint_name: 'never-saved' });
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json().detail).toMatch(/the run saved final/);

      const exported: Record<string, Record<string, any>> = {};
      for (const [type, extra] of [['adapter', {}], ['gguf', { gguf_quantization: 'f16' }], ['onnx', {}]] as const) {
        const started = await exporter.inject({ method: 'POST', url: '/exports', headers, payload: { job_id: runId, checkpoint_name: 'final', export_type: type, ...extra } });
        expect(started.statusCode, started.body).toBe(200);
        let latest: Record<string, any> = {};
        for (let i = 0; i < 600 && latest.status !== 'completed' && latest.status !== 'failed'; i++) {
          await new Promise((r) => setTimeout(r, 250));
          latest = (await exporter.inject({ url: `/exports/${runId}`, headers })).json().latest_export ?? {};
        }
        expect(latest, JSON.stringify(latest)).toMatchObject({ type, status: 'completed', checkpoint_name: 'final', checkpoint_step: null });
        exported[type] = latest;
      }
      // The ONNX export checks itself against transformers' merged model (fp32 must give its greedy tokens).
      expect(exported.onnx!.parity.find((p: { variant: string }) => p.variant === 'fp32')).toMatchObject({ agreement: 1 });
      // The GGUF file stored is the one llama.cpp answered with above.
      const file = await exporter.inject({ url: `/exports/${runId}/download?type=gguf&checkpoint_name=final`, headers });
      expect(file.statusCode).toBe(200);
      expect(file.headers['content-disposition']).toContain(`${runId}-final-model-f16.gguf`);
      const cache = path.join(h.platform.config.dataDir, 'cache', 'tinker', runId);
      const [built] = (await fs.readdir(cache, { recursive: true })).filter((f) => f.endsWith('model-f16.gguf'));
      expect(sha256(file.rawPayload)).toBe(sha256(await fs.readFile(path.join(cache, built!))));
      expect((await exporter.inject({ url: `/exports/${runId}/download?type=gguf`, headers })).statusCode).toBe(422);

      const evaluation = await inference.inject({ method: 'POST', url: '/evaluations', headers, payload: { job_id: runId, checkpoint_name: 'final', benchmarks: { tasks: ['everyday_facts'], limit: 2 } } });
      expect(evaluation.statusCode, evaluation.body).toBeLessThan(300);
      let state: Record<string, any> = evaluation.json();
      for (let i = 0; i < 600 && (state.status === 'queued' || state.status === 'running'); i++) {
        await new Promise((r) => setTimeout(r, 250));
        state = (await inference.inject({ url: `/evaluations/${state.id}`, headers })).json();
      }
      expect(state, JSON.stringify(state)).toMatchObject({ status: 'completed', job_id: runId, checkpoint_name: 'final' });
      expect(state.results.lm_eval.results.everyday_facts.acc).toMatchObject({ value: expect.any(Number), filter: 'none' });
      evaluated = state.id;
    } finally {
      await inference.close();
      await exporter.close();
    }
  }, 400_000);
});

describe('a run on the jobs surface', () => {
  it('is a job of trainer tinker in GET /jobs: paused once its session ended (its state saved), then deleted with its files', async () => {
    const runId = /^tinker:\/\/([^/]+)\//.exec(seenLoop().state)![1]!;
    const headers = { authorization: `Bearer ${key.slice(4)}` };
    let job: Record<string, any> | undefined;
    for (let i = 0; i < 100 && job?.status !== 'paused'; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      job = ((await h.train({ url: '/jobs', headers })).json() as { jobs: Array<Record<string, any>> }).jobs.find((j) => j.job_id === runId);
    }
    expect(job).toMatchObject({ status: 'paused', base_model_id: 'tiny', progress: { step: 20 }, training_config: { trainer_type: 'tinker', method: 'LoRA', model_id: seenLoop().model_id } });
    expect(job!.progress.loss).toBeTypeOf('number');
    expect((await h.train({ url: `/jobs/${runId}`, headers })).json()).toMatchObject({ job_id: runId, status: 'paused' });
    expect((await h.train({ method: 'POST', url: `/jobs/${runId}/pause`, headers })).statusCode).toBe(409);
    // its saved weights are its checkpoints
    const { checkpoints } = (await h.train({ url: `/jobs/${runId}/checkpoints`, headers })).json() as { checkpoints: Array<Record<string, unknown>> };
    expect(checkpoints).toEqual(expect.arrayContaining([
      expect.objectContaining({ name: 'after-20', kind: 'weights', step: 20, tinker_path: seenLoop().state }),
      expect.objectContaining({ name: 'final', kind: 'sampler_weights', tinker_path: seenLoop().named }),
    ]));
    // Its page's stream (the console follows it): no history of its own, and the end, since no worker holds it now.
    const stream = (await h.train({ url: `/jobs/${runId}/events`, headers })).body;
    const end = /event: end\ndata: (.*)\n/.exec(stream);
    expect(JSON.parse(end![1]!)).toMatchObject({ job_id: runId, status: 'paused' });
    const stored = await h.platform.blobs.list(`tinker/`);
    expect(stored.filter((b) => b.key.includes(runId)).map((b) => b.key)).toEqual(expect.arrayContaining([expect.stringContaining('/weights/after-20/'), expect.stringContaining('/weights/idle-state/')]));
    const deleted = await h.train({ method: 'DELETE', url: `/jobs/${runId}`, headers });
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect((await h.platform.blobs.list('tinker/')).filter((b) => b.key.includes(runId))).toEqual([]);
    // its exports' and evaluations' records went with it (no foreign key cascades for a run)
    expect(await h.platform.exports.latestForJob('alice', runId)).toBeUndefined();
    expect(await h.platform.evaluationRuns.get('alice', evaluated!)).toBeUndefined();
    expect((await fetch(`${baseUrl}/api/v1/training_runs/${runId}`, { headers: { 'x-api-key': key } })).status).toBe(404);
  });
});

describe('a run whose core dies', () => {
  it('says so on its next call, and its saved state continues on another worker exactly as the run would have', async () => {
    const child = spawn(SDK_PYTHON, ['services/tinker/test/sdk/resume.py', baseUrl, key, 'tiny'], { env: { ...process.env, ...SDK_ENV } });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (c: Buffer) => {
        stdout += c.toString();
        if (stdout.includes('READY')) resolve();
      });
      child.on('close', () => reject(new Error(`resume.py ended before READY: ${stderr.slice(-3000)}`)));
    });
    // The kernel's OOM killer or an operator: the core holding the run, SIGKILLed while its worker lives. Then that
    // worker stops, and another one is the only one left to take the run that continues.
    const cores = execFileSync('pgrep', ['-P', String(process.pid), '-f', 'ftcore tinker-session']).toString().trim().split('\n').map(Number);
    expect(cores).toHaveLength(1);
    process.kill(cores[0]!, 'SIGKILL');
    await h.worker!.stop();
    second = await startWorker(h.platform, { queues: ['session'] });
    child.stdin.write('go\n');
    expect(await closed, stderr.slice(-4000)).toBe(0);
    const seen = JSON.parse(stdout.trim().split('\n').at(-1)!) as { reference: [number, number]; resumed: [number, number]; died: string | null };
    expect(seen.died).toMatch(/killed by SIGKILL.*weights since its last save are lost: load a saved state/);
    seen.resumed.forEach((loss, i) => expect(Math.abs(loss - seen.reference[i]!) / seen.reference[i]!).toBeLessThanOrEqual(1e-5));
    expect(seen.resumed[1]).toBeLessThan(seen.resumed[0]);
    const runs = (await (await fetch(`${baseUrl}/api/v1/training_runs`, { headers: { 'x-api-key': key } })).json()) as { training_runs: Array<{ status: string; error: string | null; base_model: string }> };
    expect(runs.training_runs.filter((r) => r.status === 'failed').map((r) => r.error)).toEqual([expect.stringMatching(/killed by SIGKILL/)]);
  }, 300_000);
});
