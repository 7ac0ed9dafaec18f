// The inference service on the embedded pieces: a tiny LoRA job trained for real by the worker, then batch
// inference with adapter, merged and base on both engines (the same greedy text on each), evaluation with a task
// suite and an explicit metric list, ownership, auth, limits and the time limit. Every response is contract-checked.
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreServer } from '@ftp/core-client';
import { newId } from '@ftp/platform';
import { InferenceEngines, runEvaluation } from '@ftp/worker';
import { checkedInject } from '../../../test/contract/openapi-contract.ts';
import { loraRequest, qaCsv, startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';
import { buildInferenceApp } from '../src/app.ts';

const QA_FIELDS = { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } };
const CONVERSATIONS = [
  [{ role: 'user', content: 'What color is the sky?' }],
  [{ role: 'system', content: 'Answer briefly.' }, { role: 'user', content: [{ type: 'text', text: 'Name a ' }, { type: 'text', text: 'fruit.' }] }],
  [{ role: 'user', content: 'What do cows drink?' }],
];

let h: TrainingHarness;
let app: FastifyInstance;
let alice: Record<string, string>;
let bob: Record<string, string>;
let dataset: string;
let jobId: string;

const call = (options: InjectOptions, target = app) => checkedInject('inference', target, options);
const batch = (body: Record<string, unknown>, headers = alice, target = app) =>
  call({ method: 'POST', url: '/inference/batch', payload: body, headers }, target);
const evaluate = (body: Record<string, unknown>, headers = alice, target = app) =>
  call({ method: 'POST', url: '/evaluation', payload: body, headers }, target);

beforeAll(async () => {
  // HF_ENDPOINT: a closed local port, so a model missing from the store fails fast instead of reaching out.
  // One llama.cpp thread: on a busy 2-core machine two spinning threads make the tiny model 100x slower.
  h = await startTrainingHarness({
    AUTH_MODE: 'token',
    MAX_BATCH: '4',
    MAX_EVAL_SAMPLES: '6',
    FAST_ENGINE_QUANTIZATION: 'f16',
    FAST_ENGINE_THREADS: '1',
    HF_ENDPOINT: 'http://127.0.0.1:9',
  });
  app = await buildInferenceApp(h.platform);
  alice = { authorization: `Bearer ${(await h.platform.apiKeys.create('alice', 'a')).key}` };
  bob = { authorization: `Bearer ${(await h.platform.apiKeys.create('bob', 'b')).key}` };
  dataset = await h.dataset(qaCsv(), {}, alice);
  jobId = await h.trainedJob(dataset, alice);
}, 300_000);
afterAll(async () => {
  await app?.close();
  await h?.close();
});

/** Runs the same request twice; returns both bodies and how long each call took. */
async function twice(body: Record<string, unknown>) {
  const t0 = performance.now();
  const first = await batch(body);
  const t1 = performance.now();
  const second = await batch(body);
  const t2 = performance.now();
  expect(first.statusCode, first.body).toBe(200);
  expect(second.statusCode, second.body).toBe(200);
  return { first: first.json().results as string[], second: second.json().results as string[], firstMs: t1 - t0, secondMs: t2 - t1 };
}

describe('POST /inference/batch', () => {
  const generation = { messages: CONVERSATIONS, max_new_tokens: 12 };
  const texts: Record<string, string[]> = {};

  it.each([
    ['adapter', false],
    ['adapter', true],
    ['merged', false],
    ['merged', true],
  ])('%s on %s fast engine: one text per conversation, the model stays warm for the next call', async (source, fast) => {
    const run = await twice({ ...generation, model_source: source, job_id: jobId, use_fast_engine: fast });
    expect(run.first).toHaveLength(CONVERSATIONS.length);
    expect(run.second).toEqual(run.first); // greedy by default
    expect(run.secondMs).toBeLessThan(run.firstMs);
    texts[`${source}/${fast}`] = run.first;
    console.log(`[latency] ${source} ${fast ? 'llama.cpp' : 'transformers'}: first ${run.firstMs.toFixed(0)} ms, second ${run.secondMs.toFixed(0)} ms`);
  });

  it('base on both engines, named by base_model_id alone', async () => {
    for (const fast of [false, true]) {
      const run = await twice({ ...generation, model_source: 'base', base_model_id: 'tiny', use_fast_engine: fast });
      texts[`base/${fast}`] = run.first;
      console.log(`[latency] base ${fast ? 'llama.cpp' : 'transformers'}: first ${run.firstMs.toFixed(0)} ms, second ${run.secondMs.toFixed(0)} ms`);
    }
  });

  it('gives the same greedy text on both engines for the same model, and the trained model differs from its base', () => {
    for (const source of ['adapter', 'merged', 'base']) expect(texts[`${source}/true`], source).toEqual(texts[`${source}/false`]);
    expect(texts['adapter/false']).toEqual(texts['merged/false']);
    expect(texts['adapter/false']).not.toEqual(texts['base/false']);
    expect(texts['adapter/false']![0]).toBe('Blue.'); // 30 steps on four question/answer pairs: memorised
  });

  it('a temperature too small to sample with (1e-300) is greedy decoding on both engines, and in evaluation', async () => {
    // Dividing the logits by it once overflowed to inf/nan in the sampler: a 503 blamed on the engine.
    for (const fast of [false, true]) {
      const res = await batch({ ...generation, model_source: 'adapter', job_id: jobId, use_fast_engine: fast, temperature: 1e-300 });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().results, `fast ${fast}`).toEqual(texts['adapter/false']);
    }
    const scored = await evaluate({ dataset_id: dataset, job_id: jobId, task_type: 'qa', max_new_tokens: 8, temperature: 1e-300 });
    expect(scored.statusCode, scored.body).toBe(200);
  });

  it('checks the model choice: job and base must agree, a base must exist', async () => {
    const mismatch = await batch({ messages: CONVERSATIONS, job_id: jobId, base_model_id: 'other-model' });
    expect(mismatch.statusCode).toBe(422);
    expect(mismatch.json().detail[0].loc).toEqual(['body', 'base_model_id']);
    expect((await batch({ messages: CONVERSATIONS, job_id: jobId, base_model_id: 'tiny', max_new_tokens: 2 })).statusCode).toBe(200);
    // not in the store and not a hub id: unknown, the hub is not asked
    const unknown = await batch({ messages: CONVERSATIONS, model_source: 'base', base_model_id: 'no-such-model' });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().detail[0]).toMatchObject({ loc: ['body', 'base_model_id'], type: 'unknown_model' });
    const onHub = await batch({ messages: CONVERSATIONS, model_source: 'base', base_model_id: 'someone/no-such-model' });
    expect(onHub.statusCode).toBe(503); // not in the store, and the hub is unreachable
    expect(onHub.json().detail).toMatch(/model hub at http:\/\/127.0.0.1:9 is unreachable .* not in the model store .* or the local model folder/);
    const noJob = await batch({ messages: CONVERSATIONS, model_source: 'merged' });
    expect(noJob.statusCode).toBe(422);
    expect(noJob.json().detail[0].loc).toEqual(['body', 'job_id']);
  });

  it('more than MAX_BATCH conversations is a 422 on body.messages', async () => {
    const res = await batch({ messages: [...CONVERSATIONS, ...CONVERSATIONS], job_id: jobId });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail).toEqual([{ loc: ['body', 'messages'], msg: expect.stringContaining('MAX_BATCH (4)'), type: 'too_big' }]);
  });
});

describe('POST /evaluation', () => {
  it('task_type qa: exact_match and f1 on the test split, with samples', async () => {
    const res = await evaluate({ dataset_id: dataset, job_id: jobId, task_type: 'qa', max_new_tokens: 8 });
    expect(res.statusCode, res.body).toBe(200);
    const result = res.json();
    expect(Object.keys(result.metrics).sort()).toEqual(['exact_match', 'f1']);
    for (const value of Object.values(result.metrics)) expect(Number.isFinite(value)).toBe(true);
    expect(result.metrics.exact_match).toBeGreaterThan(0); // some answers are memorised after 30 steps
    expect(result).toMatchObject({ num_samples: 4, dataset_id: dataset, warnings: [] });
    expect(result.samples).toHaveLength(3); // num_sample_results defaults to 3
    result.samples.forEach((sample: Record<string, unknown>, i: number) => {
      expect(sample).toEqual({ input: [{ role: 'user', content: expect.any(String) }], prediction: expect.any(String), reference: expect.any(String), sample_index: i });
    });
    const rows = await h.platform.evaluations.list('alice');
    expect(rows[0]).toMatchObject({ processed_dataset_id: dataset, job_id: jobId, split: 'test', num_samples: 4, metrics: result.metrics });
    expect(JSON.stringify(rows[0]!.request)).not.toContain('hub_token');
  });

  it('an explicit metric list on the fast engine: sub-scores grouped by metric, the BERTScore encoder named', async () => {
    const res = await evaluate({ dataset_id: dataset, job_id: jobId, use_fast_engine: true, metrics: ['rouge', 'bleu', 'bertscore', 'accuracy'], num_sample_results: 1, max_new_tokens: 8 });
    expect(res.statusCode, res.body).toBe(200);
    const { metrics, samples, notes, warnings } = res.json();
    expect(Object.keys(metrics).sort()).toEqual(['accuracy', 'bertscore', 'bleu', 'rouge']);
    expect(Object.keys(metrics.rouge).sort()).toEqual(['rouge1', 'rouge2', 'rougeL']);
    expect(Object.keys(metrics.bertscore).sort()).toEqual(['f1', 'precision', 'recall']);
    for (const value of [metrics.bleu, metrics.accuracy, ...Object.values(metrics.rouge), ...Object.values(metrics.bertscore)]) {
      expect(Number.isFinite(value)).toBe(true);
    }
    expect(samples).toHaveLength(1);
    expect(warnings).toEqual([]);
    expect(notes).toContainEqual({ metric: 'bertscore', note: expect.stringContaining('all-MiniLM-L6-v2') });
  });

  it('graders beside the metrics: each grader’s mean is a metric, each sample carries its grades', async () => {
    const exact = { type: 'string_check', name: 'exact', input: '{{sample.output_text}}', reference: '{{item.reference}}', operation: 'eq' };
    const longish = { type: 'python', name: 'longish', source: 'def grade(sample, item):\n    if len(sample["output_text"]) > 1000:\n        raise ValueError("too long")\n    return 1.0 if sample["output_text"] else 0.0\n' };
    const res = await evaluate({ dataset_id: dataset, job_id: jobId, metrics: ['exact_match'], graders: [exact, longish], num_sample_results: 4, max_new_tokens: 8 });
    expect(res.statusCode, res.body).toBe(200);
    const { metrics, samples, warnings } = res.json();
    expect(Object.keys(metrics).sort()).toEqual(['exact', 'exact_match', 'longish']);
    // string_check eq is exact match without exact_match's normalisation: never above it here, where answers are short.
    expect(metrics.exact).toBeLessThanOrEqual(metrics.exact_match);
    expect(samples.map((s: { grades: Record<string, number> }) => Object.keys(s.grades).sort())).toEqual(Array(4).fill(['exact', 'longish']));
    const mean = samples.reduce((sum: number, s: { grades: { exact: number } }) => sum + s.grades.exact, 0) / samples.length;
    expect(metrics.exact).toBeCloseTo(mean, 6);
    samples.forEach((s: { prediction: string; reference: string; grades: { exact: number } }) => expect(s.grades.exact).toBe(s.prediction.trim() === s.reference.trim() ? 1 : 0));
    expect(warnings).toEqual([]);
    // Only graders: no default metric suite.
    const only = await evaluate({ dataset_id: dataset, job_id: jobId, graders: [exact], max_new_tokens: 4 });
    expect(Object.keys(only.json().metrics)).toEqual(['exact']);
    // A judge: the tiny base model, run through the worker's relay on the infer queue (its score asked for as JSON by
    // schema; the range wide enough for whatever number the untrained model writes). Another user's model: a 404.
    const judge = { type: 'score_model', name: 'judge', model: 'tiny', range: [-1e300, 1e300], input: [{ role: 'user', content: 'Rate {{sample.output_text}} against {{item.reference}}' }] };
    const judged = await evaluate({ dataset_id: dataset, job_id: jobId, graders: [judge], num_sample_results: 2, max_new_tokens: 4 });
    expect(judged.statusCode, judged.body).toBe(200);
    // The judge answered every prediction; an answer that is no usable number (8e4444444 is one) scores 0 and says so.
    for (const warning of judged.json().warnings) expect(warning).toEqual({ metric: 'judge', error: expect.stringMatching(/^\d+ of 4 predictions could not be graded and scored 0, e\.g\. the judge tiny (gave no score|scored .* outside the range)/) });
    expect(Number.isFinite(judged.json().metrics.judge)).toBe(true);
    for (const sample of judged.json().samples) expect(Number.isFinite(sample.grades.judge)).toBe(true);
    const other = await evaluate({ dataset_id: dataset, job_id: jobId, graders: [{ ...judge, model: `ft:tiny:custom:job_${'0'.repeat(24)}` }] });
    expect(other.statusCode).toBe(404);
  });

  it('uses train when there is no test split, and says so in warnings', async () => {
    const noTest = await h.dataset(qaCsv(8), { config: { field_mappings: QA_FIELDS } }, alice);
    const res = await evaluate({ dataset_id: noTest, job_id: jobId, max_samples: 5, num_sample_results: 5, max_new_tokens: 4 });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().num_samples).toBe(5);
    expect(res.json().samples.map((s: { sample_index: number }) => s.sample_index)).toEqual([0, 1, 2, 3, 4]);
    expect(res.json().warnings).toEqual([expect.stringMatching(/has no test split; evaluated on train/)]);
    expect(Object.keys(res.json().metrics).sort()).toEqual(['bleu', 'rouge']); // neither metrics nor task_type: general
  });

  it('a metric that cannot be computed is a warning, never a 0', async () => {
    // The evaluate processor itself, on engines whose core has no BERTScore encoder (the worker's domain function,
    // without the queue: one worker per lane serves this process's queue).
    const engines = new InferenceEngines(h.platform, { core: new CoreServer({ bertscoreEncoder: '/nowhere/encoder' }) });
    try {
      const request = { dataset_id: dataset, job_id: jobId, model_source: 'adapter' as const, use_fast_engine: true, metrics: ['bertscore' as const, 'exact_match' as const], max_new_tokens: 4, temperature: 0, num_sample_results: 3 };
      const result = await runEvaluation(h.platform, engines, { userId: 'alice', request }, new AbortController().signal);
      expect(Object.keys(result.metrics)).toEqual(['exact_match']);
      expect(result.warnings).toEqual([{ metric: 'bertscore', error: expect.stringContaining('/nowhere/encoder') }]);
    } finally {
      await engines.close();
    }
  });

  it('an evaluation that waits for a cold model says so in the job\'s log while it waits (#39)', async () => {
    // The ML core held 3 s in its model load, heartbeating every second: what `ftune eval` and the console read.
    const engines = new InferenceEngines(h.platform, { core: new CoreServer({ env: { FTCORE_TEST_HOLD: 'load=3', FTCORE_PROGRESS_INTERVAL: '1' } }) });
    const after = (await h.platform.jobs.events(jobId)).at(-1)!.seq;
    try {
      const request = { dataset_id: dataset, job_id: jobId, model_source: 'adapter' as const, use_fast_engine: false, metrics: ['exact_match' as const], max_new_tokens: 4, temperature: 0, num_sample_results: 0 };
      await runEvaluation(h.platform, engines, { userId: 'alice', request }, new AbortController().signal);
    } finally {
      await engines.close();
    }
    const told = (await h.platform.jobs.events(jobId, after)).map((e) => e.data as { about?: string; message?: string }).filter((d) => d.about === 'model');
    const loading = told.map((d) => /^an evaluation waits: loading .*: (\d+) s so far$/.exec(d.message ?? '')?.[1]).filter((s) => s !== undefined).map(Number);
    expect(loading.length, JSON.stringify(told)).toBeGreaterThanOrEqual(3);
    expect(loading).toEqual([...loading].sort((a, b) => a - b));
    expect(loading.at(-1)!).toBeGreaterThan(loading[0]!);
    expect(told.some((d) => /^an evaluation waits: starting the ML core/.test(d.message ?? '')), JSON.stringify(told)).toBe(true);
  });

  it('max_samples above MAX_EVAL_SAMPLES is a 422; metrics with task_type is a 422', async () => {
    const over = await evaluate({ dataset_id: dataset, job_id: jobId, max_samples: 7 });
    expect(over.statusCode).toBe(422);
    expect(over.json().detail).toEqual([{ loc: ['body', 'max_samples'], msg: expect.stringContaining('MAX_EVAL_SAMPLES (6)'), type: 'too_big' }]);
    const both = await evaluate({ dataset_id: dataset, job_id: jobId, metrics: ['bleu'], task_type: 'qa' });
    expect(both.statusCode).toBe(422);
    expect(both.json().detail[0].loc).toEqual(['body', 'task_type']);
  });
});

describe('lanes', () => {
  it('a batch inference call is answered while a long training job runs on the same worker', async () => {
    const long = await h.train({ method: 'POST', url: '/train', payload: loraRequest(dataset, { max_steps: 100_000, logging_steps: 1 }), headers: alice });
    const longId = long.json().job_id as string;
    await h.waitFor(longId, (j) => j.status === 'training', 240_000, alice);
    try {
      const res = await batch({ messages: CONVERSATIONS, model_source: 'base', base_model_id: 'tiny', max_new_tokens: 4 });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().results).toHaveLength(CONVERSATIONS.length);
      expect((await h.train({ url: `/jobs/${longId}`, headers: alice })).json().status).toBe('training');
    } finally {
      await h.train({ method: 'POST', url: `/jobs/${longId}/cancel`, headers: alice });
      await h.waitFor(longId, (j) => j.status === 'failed', 120_000, alice);
    }
  });
});

describe('ownership, auth and job state', () => {
  it("another user's job or dataset is a 404", async () => {
    const bobs = await h.dataset(qaCsv(8), {}, bob);
    expect((await batch({ messages: CONVERSATIONS, job_id: jobId }, bob)).statusCode).toBe(404);
    expect((await evaluate({ dataset_id: dataset, job_id: jobId }, bob)).statusCode).toBe(404);
    const foreignJob = await evaluate({ dataset_id: bobs, job_id: jobId }, bob);
    expect(foreignJob.statusCode).toBe(404);
    expect(foreignJob.json().detail).toContain(jobId);
    expect((await evaluate({ dataset_id: 'pd_nothing', model_source: 'base', base_model_id: 'tiny' })).statusCode).toBe(404);
  });

  it('a bearer token is required in token mode', async () => {
    const res = await batch({ messages: CONVERSATIONS, job_id: jobId }, {});
    expect(res.statusCode).toBe(401);
    expect((await evaluate({ dataset_id: dataset, job_id: jobId }, { authorization: 'Bearer nope' })).statusCode).toBe(401);
  });

  it('a job that has not completed is a 409; an adapter of a Full job is a 409 that says to use merged', async () => {
    const queued = await fakeJob('Full');
    const res = await batch({ messages: CONVERSATIONS, job_id: queued.job_id });
    expect(res.statusCode).toBe(409);
    expect(res.json().detail).toMatch(/is queued/);
    const full = await fakeJob('Full', { status: 'completed', artifacts: { file: {}, raw: { merged: 'file:///x' }, hub: {} } });
    const adapter = await batch({ messages: CONVERSATIONS, job_id: full.job_id, model_source: 'adapter' });
    expect(adapter.statusCode).toBe(409);
    expect(adapter.json().detail).toMatch(/no adapter, use merged/);
    // Its merged model was never stored: a clear 503, not a hang.
    const missing = await batch({ messages: CONVERSATIONS, job_id: full.job_id, model_source: 'merged' });
    expect(missing.statusCode).toBe(503);
    expect(missing.json().detail).toMatch(/could not be prepared: nothing stored under/);
  });

  it('a request past INFERENCE_TIMEOUT_MS is a 504 that names the limit', async () => {
    // Far under what the answer takes: a warm call of the merged model took 322 ms in a CI run, so a 300 ms limit
    // let it finish (200) on a less busy moment.
    const hurried = await buildInferenceApp({ ...h.platform, config: { ...h.platform.config, INFERENCE_TIMEOUT_MS: 50 } });
    try {
      const started = Date.now();
      const res = await batch({ messages: CONVERSATIONS, job_id: jobId, model_source: 'merged', max_new_tokens: 400 }, alice, hurried);
      expect(res.statusCode).toBe(504);
      expect(res.json().detail).toMatch(/did not finish within INFERENCE_TIMEOUT_MS \(50 ms\)/);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await hurried.close();
    }
  });
});

async function fakeJob(method: string, update: Parameters<TrainingHarness['platform']['jobs']['update']>[1] = {}) {
  const jobId = newId('job');
  await h.platform.jobs.insert({
    job_id: jobId,
    user_id: 'alice',
    job_name: 'fake',
    processed_dataset_id: dataset,
    base_model_id: 'tiny',
    modality: 'text',
    training_config: { base_model_id: 'tiny', provider: 'local', method, trainer_type: 'sft' },
    blob_prefix: `jobs/alice/${jobId}/`,
    tracker_url: null,
  });
  if (Object.keys(update).length > 0) await h.platform.jobs.update(jobId, update);
  return (await h.platform.jobs.get('alice', jobId))!;
}
