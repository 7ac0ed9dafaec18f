// Evaluations with benchmarks (POST /evaluations, #59) over the HTTP API, run by a real worker with the real core: a
// tiny LoRA job trained for the test, two lm-eval tasks of the deployment's own (YAML over local JSONL in the worker's
// LM_EVAL_TASK_DIRS) and HumanEval run on its adapter and, with with_base, on its base, lm-eval's numbers stored as it
// reports them; a processed dataset scored (metrics and a grader) on both, stored exactly as POST /evaluation answers
// the same request; cancel of a running evaluation (its core stopped) and of a queued one (never run); a task lm-eval does
// not know, said as the request's fault; what is refused before queueing; another user's evaluation reading exactly
// like an unknown one; the list's pages and delete; a stopping worker handing its evaluation back. Every JSON response
// is contract-checked.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchmarkQueue } from '@ftp/jobs/queues';
import { checkedInject } from '../../../test/contract/openapi-contract.ts';
import { qaCsv, startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';
import { buildInferenceApp } from '../src/app.ts';

/** qaCsv's pairs: the job learns them by heart, the random base knows none. */
const QA = [['What color is the sky?', 'Blue.'], ['What is two plus two?', 'Four.'], ['Name a fruit.', 'Apple.'], ['What do cows drink?', 'Water.']];
const HUB_TOKEN = 'hf_evaluations_test_token_never_shown';

let h: TrainingHarness;
let app: FastifyInstance;
let tasksDir: string;
let alice: Record<string, string>;
let bob: Record<string, string>;
let jobId: string;
let datasetId: string;

type Json = Record<string, any>;
const call = (options: InjectOptions) => checkedInject('inference', app, options);
const create = (body: Json, headers = alice) => call({ method: 'POST', url: '/evaluations', payload: body, headers });
const get = async (id: string, headers = alice) => (await call({ url: `/evaluations/${id}`, headers })).json() as Json;

function parseSse(text: string): Array<{ event: string; data: Json }> {
  return text
    .split('\n\n')
    .filter((block) => block.includes('event:'))
    .map((block) => ({ event: /event: (.*)/.exec(block)![1]!, data: JSON.parse(/data: (.*)/.exec(block)![1]!) as Json }));
}
const events = async (id: string) => parseSse((await call({ url: `/evaluations/${id}/events`, headers: alice })).body);

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 180_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value).slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
const finished = (id: string) => until(`evaluation ${id} to end`, () => get(id), (e) => !['queued', 'running'].includes(e.status as string));

/** Two lm-eval tasks over QA as the core's own test writes them: choose the answer among the four (loglikelihood), and
 *  write it (generate_until); and a third that writes long answers to QA repeated 2,000 times, which runs for minutes. */
async function writeTasks(dir: string): Promise<void> {
  const rows = QA.map(([question, answer], label) => JSON.stringify({ question, answer, choices: QA.map((p) => p[1]), label }));
  const source = async (name: string, lines: string[]) => {
    const data = path.join(dir, `${name}.jsonl`);
    await fs.writeFile(data, lines.join('\n') + '\n');
    return `dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: ${data}\ntest_split: test\ndoc_to_text: "{{question}}"\n`;
  };
  const qa = await source('qa', rows);
  const answer = (tokens: number, until = '\\n') =>
    `output_type: generate_until\ndoc_to_target: "{{answer}}"\ngeneration_kwargs:\n  until: ["${until}"]\n  max_gen_toks: ${tokens}\n  do_sample: false\n` +
    'metric_list:\n  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n';
  await fs.writeFile(path.join(dir, 'qa_choice.yaml'),
    `task: qa_choice\n${qa}output_type: multiple_choice\ndoc_to_choice: "{{choices}}"\ndoc_to_target: label\nmetric_list:\n  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n`);
  await fs.writeFile(path.join(dir, 'qa_answer.yaml'), `task: qa_answer\n${qa}${answer(12)}`);
  await fs.writeFile(path.join(dir, 'qa_long.yaml'), `task: qa_long\n${await source('qa_long', Array.from({ length: 500 }, () => rows).flat())}${answer(256, '#never#')}`);
}

beforeAll(async () => {
  tasksDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-lm-eval-tasks-'));
  await writeTasks(tasksDir);
  // HF_ENDPOINT: a closed local port, so nothing reaches out for the hub.
  h = await startTrainingHarness({ AUTH_MODE: 'token', HF_ENDPOINT: 'http://127.0.0.1:9', LM_EVAL_TASK_DIRS: tasksDir });
  app = await buildInferenceApp(h.platform);
  alice = { authorization: `Bearer ${(await h.platform.apiKeys.create('alice', 'a')).key}` };
  bob = { authorization: `Bearer ${(await h.platform.apiKeys.create('bob', 'b')).key}` };
  datasetId = await h.dataset(qaCsv(), {}, alice);
  jobId = await h.trainedJob(datasetId, alice);
}, 300_000);
afterAll(async () => {
  await app?.close();
  await h?.close();
  if (tasksDir) await fs.rm(tasksDir, { recursive: true, force: true });
});

describe('POST /evaluations refuses what cannot run, before anything is queued', () => {
  it.each([
    ['an empty benchmarks object', { job_id: 'job_x', benchmarks: {} }, ['body', 'benchmarks'], /name lm-eval tasks \(tasks\) or ask for humaneval/],
    ['task folders over HTTP', { job_id: 'job_x', benchmarks: { tasks: ['qa_choice'], task_dirs: ['/etc'] } }, ['body', 'benchmarks', 'task_dirs'], /Unknown field "task_dirs"/],
    ['pass@2 of one sample', { job_id: 'job_x', benchmarks: { humaneval: { k: [2] } } }, ['body', 'benchmarks', 'humaneval', 'k'], /pass@2 needs samples ≥ 2/],
    ['a fractional count', { job_id: 'job_x', benchmarks: { tasks: ['qa_choice'], limit: 2.5 } }, ['body', 'benchmarks', 'limit'], /a count \(an integer ≥ 1\) or a fraction/],
    ['with_base of a base model', { model_source: 'base', base_model_id: 'tiny', with_base: true, benchmarks: { tasks: ['qa_choice'] } }, ['body', 'with_base'], /model is the base already/],
    ['neither benchmarks nor a dataset', { job_id: 'job_x' }, ['body'], /ask for benchmarks, a dataset to score, or both/],
    ['a dataset scored by metrics and a suite', { job_id: 'job_x', dataset: { dataset_id: 'pd_x', metrics: ['f1'], task_type: 'qa' } }, ['body', 'dataset', 'task_type'], /either metrics or task_type/],
  ])('%s: a 422 naming the field', async (_what, body, loc, msg) => {
    const res = await create(body);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail).toContainEqual(expect.objectContaining({ loc, msg: expect.stringMatching(msg) }));
  });

  it('another user’s job is a 404, as an unknown one; nothing is stored', async () => {
    const theirs = await create({ job_id: jobId, benchmarks: { tasks: ['qa_choice'] } }, bob);
    const unknown = await create({ job_id: 'job_000000000000000000000000', benchmarks: { tasks: ['qa_choice'] } }, bob);
    expect([theirs.statusCode, unknown.statusCode]).toEqual([404, 404]);
    expect(theirs.json().detail.replace(jobId, 'ID')).toBe(unknown.json().detail.replace('job_000000000000000000000000', 'ID'));
    expect((await call({ url: '/evaluations', headers: bob })).json()).toEqual({ evaluations: [], has_more: false });
  });
});

describe('an evaluation of a job’s adapter with its base', () => {
  let evaluation: Json;

  it('runs the deployment’s own lm-eval tasks and HumanEval on both, and stores lm-eval’s numbers', { timeout: 300_000 }, async () => {
    const res = await create({
      job_id: jobId,
      hub_token: HUB_TOKEN,
      with_base: true,
      benchmarks: { tasks: ['qa_choice', 'qa_answer'], apply_chat_template: true, humaneval: { limit: 1, max_new_tokens: 8 } },
    });
    expect(res.statusCode, res.body).toBe(200);
    const created = res.json();
    expect(created).toMatchObject({ status: 'queued', model_source: 'adapter', job_id: jobId, base_model_id: 'tiny', results: null, base_results: null, error: null, started_at: null });
    expect(created.id).toMatch(/^evalrun_[0-9a-f]{24}$/);
    expect(created.request).toEqual({
      model_source: 'adapter', job_id: jobId, with_base: true,
      benchmarks: { tasks: ['qa_choice', 'qa_answer'], apply_chat_template: true, humaneval: { limit: 1, samples: 1, k: [1], timeout: 3, temperature: 0, max_new_tokens: 8 } },
    });
    evaluation = await finished(created.id);
    expect(evaluation.status, JSON.stringify(evaluation)).toBe('completed');
    const tuned = evaluation.results.lm_eval;
    const base = evaluation.base_results.lm_eval;
    // lm-eval's own figures: a value and its stderr per task and metric, the examples it used, its version.
    expect(tuned.results.qa_choice.acc).toEqual({ value: expect.any(Number), stderr: expect.any(Number), filter: 'none' });
    expect(tuned.n_samples.qa_answer).toEqual({ original: 4, effective: 4 });
    expect(tuned.config).toMatchObject({ apply_chat_template: true, lm_eval: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    // The adapter was applied (it answers as trained: 3 of the 4 word for word, after 30 steps) and the base ran without
    // it (it knows none).
    expect(tuned.results.qa_answer.exact_match.value).toBeGreaterThanOrEqual(0.75);
    expect(base.results.qa_answer.exact_match.value).toBe(0);
    for (const results of [evaluation.results, evaluation.base_results]) {
      expect(results.humaneval).toMatchObject({ 'pass@1': 0, problems: 1, samples: 1, timeout: 3, per_problem: { 'HumanEval/0': { samples: 1, passed: 0, first_failure: expect.any(String) } } });
    }
    expect(evaluation.finished_at >= evaluation.started_at && evaluation.started_at >= evaluation.created_at).toBe(true);
    // Neither the hub token nor the worker's paths are anywhere the API or the rows hold.
    const stored = JSON.stringify([evaluation, await h.platform.db.query('SELECT * FROM evaluation_runs'), await h.platform.db.query('SELECT * FROM evaluation_run_events')]);
    expect(stored).not.toContain(HUB_TOKEN);
    expect(stored).not.toContain(h.platform.dataDir);
    expect(await h.platform.secrets.open(created.id)).toBeUndefined();
  });

  it('has its log as server-sent events: its statuses, the benchmark’s lines of each model, then the final evaluation', async () => {
    const stream = await events(evaluation.id);
    expect(stream.filter((e) => e.event === 'status').map((e) => e.data.status)).toEqual(['queued', 'running', 'completed']);
    const lines = stream.filter((e) => e.event === 'log');
    for (const model of ['model', 'base']) {
      expect(lines.filter((e) => e.data.model === model).map((e) => e.data.message)).toEqual(expect.arrayContaining(['lm-eval: qa_choice, qa_answer on cpu', 'humaneval: 1 problems × 1 samples']));
    }
    expect(stream.at(-1)).toEqual({ event: 'end', data: evaluation });
  });
});

describe('an evaluation that scores a dataset', () => {
  it('stores, for the model and its base, what POST /evaluation answers for the same request', { timeout: 240_000 }, async () => {
    const scoring = {
      dataset_id: datasetId, metrics: ['exact_match', 'f1'], max_new_tokens: 8, num_sample_results: 4,
      graders: [{ type: 'string_check', name: 'exact', input: '{{sample.output_text}}', reference: '{{item.reference}}', operation: 'eq' }],
    };
    const created = (await create({ job_id: jobId, with_base: true, dataset: scoring })).json();
    expect(created.request).toMatchObject({ dataset: { ...scoring, temperature: 0 } });
    const evaluation = await finished(created.id);
    expect(evaluation.status, JSON.stringify(evaluation)).toBe('completed');
    const synchronous = async (model: Json) => {
      const res = await call({ method: 'POST', url: '/evaluation', payload: { ...model, ...scoring }, headers: alice });
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as Json;
    };
    expect(evaluation.results).toEqual({ dataset: await synchronous({ job_id: jobId }) });
    expect(evaluation.base_results).toEqual({ dataset: await synchronous({ model_source: 'base', base_model_id: 'tiny' }) });
    // The tuned model answers its test rows as trained; the random base does not.
    expect(evaluation.results.dataset.metrics.exact).toBeGreaterThan(evaluation.base_results.dataset.metrics.exact);
    expect((await events(created.id)).filter((e) => e.event === 'log').map((e) => e.data.message)).toContain(`scoring processed dataset ${datasetId}`);
  });

  it('refuses a dataset that is not the caller’s, naming the field', async () => {
    const res = await create({ job_id: jobId, dataset: { dataset_id: datasetId } }, bob);
    expect(res.statusCode).toBe(404);
  });
});

describe('cancel', () => {
  it('stops a running evaluation’s benchmark, and a queued one never runs', { timeout: 180_000 }, async () => {
    // 2,000 answers of up to 256 tokens: far longer than the test waits.
    const running = (await create({ model_source: 'base', base_model_id: 'tiny', benchmarks: { tasks: ['qa_long'] } })).json();
    // (The rows, not the stream: a running evaluation's stream follows it to its end.)
    await until('the benchmark to start', () => h.platform.evaluationRuns.events(running.id), (log) => log.some((e) => e.kind === 'log' && /loading the ML libraries/.test(String(e.data.message))));
    const queued = (await create({ model_source: 'base', base_model_id: 'tiny', benchmarks: { tasks: ['qa_choice'] } })).json();
    expect((await get(queued.id)).status).toBe('queued'); // the lane takes one at a time

    const cancelledQueued = await call({ method: 'POST', url: `/evaluations/${queued.id}/cancel`, headers: alice });
    expect(cancelledQueued.statusCode, cancelledQueued.body).toBe(200);
    expect(cancelledQueued.json()).toMatchObject({ status: 'cancelled', finished_at: expect.any(String), results: null });
    const holds = async () => (await h.platform.workers.live(60)).some((w) => w.current_jobs.includes(running.id));
    await until('the worker’s heartbeat to list the evaluation at work', holds, (held) => held, 30_000);
    const started = Date.now();
    const cancelledRunning = await call({ method: 'POST', url: `/evaluations/${running.id}/cancel`, headers: alice });
    expect(cancelledRunning.json()).toMatchObject({ status: 'cancelled', results: null, error: null });
    // Its core is stopped: the worker's work on it ends (its heartbeat no longer lists it), and nothing more is written.
    await until('the worker to let go of the evaluation', holds, (held) => !held, 30_000);
    console.log(`[cancel] the running benchmark stopped ${((Date.now() - started) / 1000).toFixed(1)} s after its cancel`);
    await until('the queued one to leave the queue', () => h.platform.queue.pending(benchmarkQueue), (pending) => pending.length === 0, 30_000);
    expect(await get(running.id)).toMatchObject({ status: 'cancelled', results: null });
    expect((await events(running.id)).filter((e) => e.event === 'status').map((e) => e.data.status)).toEqual(['queued', 'running', 'cancelled']);
    // The queued one was never taken: no start, no line of a benchmark.
    expect(await get(queued.id)).toMatchObject({ status: 'cancelled', started_at: null });
    expect((await events(queued.id)).filter((e) => e.event !== 'end').map((e) => e.data.status ?? e.data.message)).toEqual(['queued', 'cancelled']);
    // Once ended, a cancel is a 409 that says so.
    const again = await call({ method: 'POST', url: `/evaluations/${running.id}/cancel`, headers: alice });
    expect(again.statusCode).toBe(409);
    expect(again.json().detail).toMatch(/is already cancelled/);
  });
});

describe('a task lm-eval does not know', () => {
  it('fails the evaluation with lm-eval’s reason, said as the request’s fault', { timeout: 120_000 }, async () => {
    const created = (await create({ job_id: jobId, model_source: 'merged', benchmarks: { tasks: ['no_such_task'] } })).json();
    const failed = await finished(created.id);
    expect(failed).toMatchObject({ status: 'failed', results: null, error: expect.stringMatching(/^the benchmarks cannot run as asked: lm-eval knows no task 'no_such_task'/) });
  });
});

describe('another user, the list, delete', () => {
  it('reads another user’s evaluation exactly like an unknown one', async () => {
    const [mine] = (await call({ url: '/evaluations?limit=1', headers: alice })).json().evaluations as Json[];
    const unknown = 'evalrun_000000000000000000000000';
    for (const [method, suffix] of [['GET', ''], ['GET', '/events'], ['POST', '/cancel'], ['DELETE', '']] as const) {
      const theirs = await call({ method, url: `/evaluations/${mine!.id}${suffix}`, headers: bob });
      const none = await call({ method, url: `/evaluations/${unknown}${suffix}`, headers: bob });
      expect([theirs.statusCode, none.statusCode], `${method} ${suffix}`).toEqual([404, 404]);
      expect(theirs.json().detail.replace(mine!.id, 'ID')).toBe(none.json().detail.replace(unknown, 'ID'));
    }
    expect((await call({ url: '/evaluations', headers: bob })).json()).toEqual({ evaluations: [], has_more: false });
  });

  it('lists the caller’s evaluations newest first, a page at a time', async () => {
    const all = (await call({ url: '/evaluations', headers: alice })).json();
    expect(all.has_more).toBe(false);
    const ids = (all.evaluations as Json[]).map((e) => e.id);
    expect(ids).toHaveLength(5);
    const created = (all.evaluations as Json[]).map((e) => e.created_at as string);
    expect([...created].sort().reverse()).toEqual(created);
    const first = (await call({ url: '/evaluations?limit=3', headers: alice })).json();
    expect([first.evaluations.map((e: Json) => e.id), first.has_more]).toEqual([ids.slice(0, 3), true]);
    const next = (await call({ url: `/evaluations?limit=3&after=${ids[2]}`, headers: alice })).json();
    expect([next.evaluations.map((e: Json) => e.id), next.has_more]).toEqual([ids.slice(3), false]);
  });

  it('deletes a finished evaluation with its log; a queued one is a 409 until cancelled', async () => {
    const [latest] = (await call({ url: '/evaluations?limit=1', headers: alice })).json().evaluations as Json[];
    expect(latest!.status).toBe('failed');
    const deleted = await call({ method: 'DELETE', url: `/evaluations/${latest!.id}`, headers: alice });
    expect(deleted.json()).toEqual({ id: latest!.id, deleted: true });
    expect((await call({ url: `/evaluations/${latest!.id}`, headers: alice })).statusCode).toBe(404);
    expect(await h.platform.evaluationRuns.events(latest!.id)).toEqual([]);

    // Queued, or already taken by the worker: either way it is not deleted until cancelled.
    const waiting = (await create({ model_source: 'base', base_model_id: 'tiny', benchmarks: { tasks: ['qa_choice'] } })).json();
    const refused = await call({ method: 'DELETE', url: `/evaluations/${waiting.id}`, headers: alice });
    expect([refused.statusCode, refused.json().detail]).toEqual([409, expect.stringMatching(/cancel it first/)]);
    await call({ method: 'POST', url: `/evaluations/${waiting.id}/cancel`, headers: alice });
    expect((await call({ method: 'DELETE', url: `/evaluations/${waiting.id}`, headers: alice })).statusCode).toBe(200);
  });
});

describe('a worker that stops', () => {
  it('hands its running evaluation back to the queue, to start over on whichever worker takes it', { timeout: 120_000 }, async () => {
    const running = (await create({ model_source: 'base', base_model_id: 'tiny', benchmarks: { tasks: ['qa_long'] } })).json();
    await until('the benchmark to start', () => h.platform.evaluationRuns.events(running.id), (log) => log.some((e) => e.kind === 'log' && /loading the ML libraries/.test(String(e.data.message))));
    await h.worker!.stop(); // SIGTERM's path; the last test of the file, since this worker is gone now
    expect(await h.platform.evaluationRuns.getForWorker(running.id)).toMatchObject({ status: 'queued', worker_id: null, attempts: 1, results: null });
    expect((await h.platform.evaluationRuns.events(running.id)).at(-1)!.data).toMatchObject({ message: `queued again: worker ${h.worker!.workerId} stopped (SIGTERM) while it ran; it starts over` });
    expect((await h.platform.queue.pending(benchmarkQueue)).map((e) => e.payload.evaluationId)).toEqual([running.id]);
  });
});
