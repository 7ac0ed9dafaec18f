// Pairwise comparisons (POST /comparisons, #61) over the HTTP API, run by a real worker with the real core on a tiny
// LoRA job trained for the test (A) against its random base (B): judges that are stand-ins at LLM_API_BASE with a
// known bias (one always prefers the first position, one the longer answer) give counts known in advance; a judge
// served by this stack (the job's own ft: model through the infer queue) completes with numbers that follow from its
// stored verdicts. Also: what is refused before a worker is asked, another user's comparison reading like an unknown
// one, the list's pages and delete, and a job's deletion taking its comparisons along. Every response is
// contract-checked.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { summarize, type PositionVerdict } from '@ftp/jobs/training';
import { checkedInject } from '../../../test/contract/openapi-contract.ts';
import { qaCsv, startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';
import { buildInferenceApp } from '../src/app.ts';

type Json = Record<string, any>;
const HUB_TOKEN = 'hf_comparisons_test_token_never_shown';

/** The stand-in judges at LLM_API_BASE, by model name, and every request they were sent. */
const judged: Array<{ model: string; first: string; second: string; max_tokens: number }> = [];
function standInJudge(): http.Server {
  return http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const request = JSON.parse(body) as { model: string; max_tokens: number; messages: Array<{ content: string }> };
      const text = request.messages.at(-1)!.content;
      const first = /\[Answer 1\]\n([\s\S]*)\n\[End of answer 1\]/.exec(text)![1]!;
      const second = /\[Answer 2\]\n([\s\S]*)\n\[End of answer 2\]/.exec(text)![1]!;
      judged.push({ model: request.model, first, second, max_tokens: request.max_tokens });
      const verdict = request.model === 'always-first' ? 'Answer 1' : first.length === second.length ? 'Tie' : first.length > second.length ? 'Answer 1' : 'Answer 2';
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'chat.completion', model: request.model, choices: [{ index: 0, message: { role: 'assistant', content: `${verdict}.` }, finish_reason: 'stop' }] }));
    });
  });
}

let h: TrainingHarness;
let app: FastifyInstance;
let judge: http.Server;
let alice: Record<string, string>;
let bob: Record<string, string>;
let jobId: string;
let datasetId: string;

const call = (options: InjectOptions) => checkedInject('inference', app, options);
const compare = (body: Json, headers = alice) => call({ method: 'POST', url: '/comparisons', payload: body, headers });
const tunedVsBase = (judgeModel: string, extra: Json = {}) => ({
  dataset_id: datasetId,
  model_a: { job_id: jobId },
  model_b: { model_source: 'base', base_model_id: 'tiny' },
  judge: { model: judgeModel },
  max_new_tokens: 12,
  ...extra,
});

beforeAll(async () => {
  judge = standInJudge();
  await new Promise<void>((resolve) => judge.listen(0, '127.0.0.1', resolve));
  const { port } = judge.address() as AddressInfo;
  h = await startTrainingHarness({ AUTH_MODE: 'token', HF_ENDPOINT: 'http://127.0.0.1:9', LLM_API_BASE: `http://127.0.0.1:${port}/v1` });
  app = await buildInferenceApp(h.platform);
  alice = { authorization: `Bearer ${(await h.platform.apiKeys.create('alice', 'a')).key}` };
  bob = { authorization: `Bearer ${(await h.platform.apiKeys.create('bob', 'b')).key}` };
  datasetId = await h.dataset(qaCsv(), {}, alice);
  jobId = await h.trainedJob(datasetId, alice);
}, 300_000);
afterAll(async () => {
  await app?.close();
  await h?.close();
  await new Promise((resolve) => judge?.close(resolve));
});

describe('POST /comparisons refuses what cannot run, before a worker is asked', () => {
  it.each([
    ['the same model twice', { model_b: { job_id: 'job_x' }, model_a: { job_id: 'job_x' } }, ['body', 'model_b'], /model_b is model_a again/],
    ['a base model without its id', { model_b: { model_source: 'base' } }, ['body', 'model_b', 'base_model_id'], /base_model_id is required/],
    ['a judge that writes no token', { judge: { model: 'always-first', max_tokens: 0 } }, ['body', 'judge', 'max_tokens'], /./],
  ])('%s: a 422 naming the field', async (_what, change, loc, msg) => {
    const res = await compare({ ...tunedVsBase('always-first'), ...change });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail).toContainEqual(expect.objectContaining({ loc, msg: expect.stringMatching(msg) }));
  });

  it('another user’s job, dataset or fine-tuned judge is a 404, as unknown ones are; nothing is stored', async () => {
    const ftName = `ft:tiny:custom:${jobId}`;
    for (const body of [tunedVsBase('always-first'), { ...tunedVsBase('always-first'), model_a: { model_source: 'base', base_model_id: 'tiny' }, model_b: { job_id: jobId } }]) {
      expect((await compare(body, bob)).statusCode).toBe(404);
    }
    const theirJudge = await compare({ ...tunedVsBase(ftName), model_a: { model_source: 'base', base_model_id: 'tiny' }, model_b: { model_source: 'base', base_model_id: 'tiny', use_fast_engine: true }, dataset_id: await h.dataset(qaCsv(8), {}, bob) }, bob);
    expect(theirJudge.statusCode, theirJudge.body).toBe(404);
    expect((await call({ url: '/comparisons', headers: bob })).json()).toEqual({ comparisons: [], has_more: false });
  });
});

describe('judges whose bias is known', () => {
  it('one that always prefers the first position: every verdict flips, consistency 0, all ties, no winner', { timeout: 180_000 }, async () => {
    judged.length = 0;
    const res = await compare({ ...tunedVsBase('always-first'), hub_token: HUB_TOKEN });
    expect(res.statusCode, res.body).toBe(200);
    const comparison = res.json();
    expect(comparison.id).toMatch(/^cmp_[0-9a-f]{24}$/);
    expect(comparison).toMatchObject({
      split: 'test', pairs: 4, counts: { win: 0, tie: 4, loss: 0 }, rates: { win: 0, tie: 1, loss: 0 }, win_share: null, interval: [0, 1],
      position_consistency: 0, unreadable: [], winner: null, warnings: [],
      model_a: { model_source: 'adapter', job_id: jobId, use_fast_engine: false }, judge: { model: 'always-first', max_tokens: 16 },
    });
    expect(comparison.flipped).toEqual(comparison.verdicts.map((v: Json) => v.sample_index));
    expect(comparison.verdicts.map((v: Json) => [v.a_first, v.b_first, v.outcome, v.consistent])).toEqual(Array(4).fill(['first', 'first', 'tie', false]));
    // Each pair was put to the judge in both orders.
    expect(judged).toHaveLength(8);
    for (const v of comparison.verdicts as Json[]) {
      expect(judged).toContainEqual({ model: 'always-first', first: v.answer_a, second: v.answer_b, max_tokens: 16 });
      expect(judged).toContainEqual({ model: 'always-first', first: v.answer_b, second: v.answer_a, max_tokens: 16 });
    }
    // Stored as answered, without the hub token.
    expect((await call({ url: `/comparisons/${comparison.id}`, headers: alice })).json()).toEqual(comparison);
    expect(JSON.stringify(await h.platform.db.query('SELECT * FROM comparisons'))).not.toContain(HUB_TOKEN);
  });

  it('one that prefers the longer answer: the counts follow from the two models’ answers, which are theirs', { timeout: 180_000 }, async () => {
    const comparison = (await compare(tunedVsBase('longer-answer'))).json();
    // The stored answers are what each model answers to the same prompts through batch inference.
    const answersOf = async (model: Json) => {
      const res = await call({ method: 'POST', url: '/inference/batch', headers: alice, payload: { ...model, max_new_tokens: 12, messages: comparison.verdicts.map((v: Json) => v.prompt) } });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().results as string[];
    };
    expect(comparison.verdicts.map((v: Json) => v.answer_a)).toEqual(await answersOf({ job_id: jobId }));
    expect(comparison.verdicts.map((v: Json) => v.answer_b)).toEqual(await answersOf({ model_source: 'base', base_model_id: 'tiny' }));
    const expected = { win: 0, tie: 0, loss: 0 };
    for (const v of comparison.verdicts as Json[]) expected[v.answer_a.length > v.answer_b.length ? 'win' : v.answer_a.length < v.answer_b.length ? 'loss' : 'tie'] += 1;
    // The tuned model answers as trained ("Blue."); the random base writes its 12 tokens: A is the shorter, mostly.
    expect(expected.loss).toBeGreaterThan(0);
    expect(comparison.counts).toEqual(expected);
    expect(comparison).toMatchObject({ position_consistency: 1, flipped: [], unreadable: [] });
    expect(comparison.winner).toBe(summarize(comparison.verdicts.map((v: Json) => ({ index: v.sample_index, aFirst: v.a_first, bFirst: v.b_first }))).winner);
  });
});

describe('a judge served by this stack', () => {
  it('the job’s own fine-tuned model judges through the infer queue; the numbers follow from its stored verdicts', { timeout: 240_000 }, async () => {
    const res = await compare({ ...tunedVsBase(`ft:tiny:custom:${jobId}`), max_samples: 3, judge: { model: `ft:tiny:custom:${jobId}`, max_tokens: 4, criteria: 'the answer a teacher would give' } });
    expect(res.statusCode, res.body).toBe(200);
    const comparison = res.json();
    expect(comparison.pairs).toBe(3);
    const judgements = comparison.verdicts.map((v: Json) => ({ index: v.sample_index as number, aFirst: v.a_first as PositionVerdict, bFirst: v.b_first as PositionVerdict }));
    const { pairs, counts, rates, win_share, interval, position_consistency, flipped, unreadable, winner } = summarize(judgements);
    expect(comparison).toMatchObject({ pairs, counts, rates, win_share, interval, position_consistency, flipped, unreadable, winner });
    for (const v of comparison.verdicts as Json[]) expect(typeof v.reply_a_first === 'string' && typeof v.reply_b_first === 'string').toBe(true);
  });
});

describe('the resource', () => {
  it('lists a page at a time, newest first; another user’s reads as unknown; delete, then deleting the job takes the rest', { timeout: 60_000 }, async () => {
    const all = (await call({ url: '/comparisons', headers: alice })).json();
    expect(all.comparisons).toHaveLength(3);
    const first = (await call({ url: '/comparisons?limit=2', headers: alice })).json();
    const rest = (await call({ url: `/comparisons?limit=2&after=${first.comparisons[1].id}`, headers: alice })).json();
    expect([first.has_more, rest.has_more]).toEqual([true, false]);
    expect([...first.comparisons, ...rest.comparisons].map((c: Json) => c.id)).toEqual(all.comparisons.map((c: Json) => c.id));
    const [newest, ...older] = all.comparisons.map((c: Json) => c.id as string);
    const theirs = await call({ url: `/comparisons/${newest}`, headers: bob });
    const unknown = await call({ url: '/comparisons/cmp_000000000000000000000000', headers: bob });
    expect([theirs.statusCode, unknown.statusCode]).toEqual([404, 404]);
    expect(theirs.json().detail.replace(newest!, 'ID')).toBe(unknown.json().detail.replace('cmp_000000000000000000000000', 'ID'));
    expect((await call({ method: 'DELETE', url: `/comparisons/${newest}`, headers: bob })).statusCode).toBe(404);
    expect((await call({ method: 'DELETE', url: `/comparisons/${newest}`, headers: alice })).json()).toEqual({ id: newest, deleted: true });
    expect((await call({ url: `/comparisons/${newest}`, headers: alice })).statusCode).toBe(404);

    const deleted = await h.train({ method: 'DELETE', url: `/jobs/${jobId}`, headers: alice });
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(deleted.json().deleted_resources).toEqual(expect.arrayContaining(older.map((id: string) => `comparisons/${id}`)));
    expect((await call({ url: '/comparisons', headers: alice })).json()).toEqual({ comparisons: [], has_more: false });
  });
});
