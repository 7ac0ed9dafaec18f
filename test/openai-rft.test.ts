// Reinforcement fine-tuning and graders through the official clients, unchanged, against this worker's shared embedded
// stack (JWT auth, two users of this file's own) and the tiny model: the `openai` npm package here, and the `openai`
// Python package (test/openai-rft-client.py) for a job graded by multi and python graders. Graded on a real worker: the
// core's graders, the python one in its sandbox.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import OpenAI, { BadRequestError, NotFoundError, toFile } from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CORE_PYTHON } from '@ftp/core-client';
import { until } from './support/http.ts';
import { sharedStack } from './support/shared-stack.ts';
import { TINY_MODEL } from './support/tiny-model.ts';

let alice: OpenAI;
let bob: OpenAI;
let urls: { openai: string };
let tokens: { alice: string; bob: string };

beforeAll(async () => {
  const stack = await sharedStack();
  urls = stack.urls;
  tokens = { alice: await stack.token('rft-alice'), bob: await stack.token('rft-bob') };
  alice = new OpenAI({ apiKey: tokens.alice, baseURL: `${urls.openai}/v1`, maxRetries: 0 });
  bob = new OpenAI({ apiKey: tokens.bob, baseURL: `${urls.openai}/v1`, maxRetries: 0 });
}, 300_000);

const EXACT = { type: 'string_check', name: 'exact', input: '{{sample.output_text}}', reference: '{{item.answer}}', operation: 'eq' } as const;
const RAISING = {
  type: 'python',
  name: 'length',
  source: "def grade(sample, item):\n    if item.get('boom'):\n        raise ValueError('boom on ' + item['answer'])\n    return min(1.0, len(sample['output_text']) / 10)\n",
} as const;

describe('graders with the official npm client', { timeout: 120_000 }, () => {
  it('run: a string_check, a multi grader with cosine, and a python grader that raises on one item', async () => {
    const graders = alice.fineTuning.alpha.graders;
    expect((await graders.run({ grader: EXACT, model_sample: 'Paris', item: { answer: 'Paris' } })).reward).toBe(1);
    expect((await graders.run({ grader: EXACT, model_sample: 'Rome', item: { answer: 'Paris' } })).reward).toBe(0);
    const multi = {
      type: 'multi',
      name: 'both',
      calculate_output: '0.5 * exact + 0.5 * close',
      graders: { exact: EXACT, close: { type: 'text_similarity', name: 'close', input: '{{sample.output_text}}', reference: '{{item.answer}}', evaluation_metric: 'cosine' } },
    } as const;
    const both = await graders.run({ grader: multi as never, model_sample: 'Paris', item: { answer: 'Paris' } });
    expect(both.reward).toBeCloseTo(1, 4);
    expect(Object.keys(both.sub_rewards).sort()).toEqual(['close', 'exact']);
    const fine = await graders.run({ grader: RAISING, model_sample: 'Paris', item: { answer: 'Paris' } });
    expect(fine).toMatchObject({ reward: 0.5, metadata: { name: 'length', type: 'python', errors: { python_grader_runtime_error: false } } });
    const raised = await graders.run({ grader: RAISING, model_sample: 'Paris', item: { answer: 'Paris', boom: true } });
    expect(raised).toMatchObject({ reward: 0, metadata: { errors: { python_grader_runtime_error: true, python_grader_runtime_error_details: 'line 3: ValueError: boom on Paris' } } });
  });

  it('validate: a grader that can run comes back; what cannot run is a 400 naming the field', async () => {
    expect((await alice.fineTuning.alpha.graders.validate({ grader: EXACT })).grader).toMatchObject(EXACT);
    const refused = async (grader: unknown) => {
      const error = await alice.fineTuning.alpha.graders.validate({ grader: grader as never }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BadRequestError);
      return (error as BadRequestError).error as { param: string; message: string };
    };
    expect(await refused({ type: 'python', name: 'p', source: 'def grade(sample, item)\n    return 1' })).toMatchObject({ param: 'grader.source', message: expect.stringMatching(/line 1/) });
    expect(await refused({ ...EXACT, reference: '{{ secrets.key }}' })).toMatchObject({ param: 'grader.reference', message: expect.stringMatching(/is not a variable/) });
  });

  it('a score_model grader is judged by one of this stack’s models with its owner’s rights; another user’s model is a 404', async () => {
    // The tiny base model judges through the worker's relay (its score asked for as JSON; a range wide enough for any
    // number the untrained model writes). Alice's fine-tuned models are hers: named by Bob, a 404.
    const judge = { type: 'score_model', name: 'judge', model: TINY_MODEL, range: [-1e300, 1e300], input: [{ role: 'user', content: 'Rate {{sample.output_text}} against {{item.answer}}' }] } as const;
    expect((await alice.fineTuning.alpha.graders.validate({ grader: judge as never })).grader).toMatchObject({ type: 'score_model', model: TINY_MODEL });
    const judged = await alice.fineTuning.alpha.graders.run({ grader: judge as never, model_sample: 'Paris', item: { answer: 'Paris' } });
    expect(judged.metadata.errors).toMatchObject({ model_grader_server_error: false, invalid_variable_error: false });
    expect(Number.isFinite(judged.reward)).toBe(true);
    await expect(bob.fineTuning.alpha.graders.run({ grader: { ...judge, model: `ft:${TINY_MODEL}:custom:job_${'0'.repeat(24)}` } as never, model_sample: 'Paris', item: { answer: 'Paris' } })).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('a reinforcement fine-tuning job with the official npm client', { timeout: 600_000 }, () => {
  it('raises the mean reward of its string_check grader, shows it in the events, and is its owner’s only', async () => {
    // Reward 1 when the sampled answer holds "Paris" (string_check like): the random tiny model's 256-token answers do
    // about a third of the time, so each group of answers has both outcomes to learn from. Fixed seed: the same run
    // each time on CPU.
    const lines = ['Say a word.', 'Say a letter.', 'Name a color.', 'Count to three.'].flatMap((q) => [{ messages: [{ role: 'user', content: q }], answer: 'Paris' }]);
    const file = await alice.files.create({ file: await toFile(Buffer.from([...lines, ...lines].map((l) => JSON.stringify(l)).join('\n')), 'rft.jsonl'), purpose: 'fine-tune' });
    const created = await alice.fineTuning.jobs.create({
      model: TINY_MODEL,
      training_file: file.id,
      seed: 7,
      method: {
        type: 'reinforcement',
        reinforcement: {
          grader: { ...EXACT, name: 'has_paris', operation: 'like' },
          hyperparameters: { n_epochs: 5, batch_size: 2, compute_multiplier: 1, learning_rate_multiplier: 50 },
        },
      },
    });
    expect(created).toMatchObject({ status: 'queued', method: { type: 'reinforcement', reinforcement: { hyperparameters: { n_epochs: 5, batch_size: 2, compute_multiplier: 1 } } } });
    const job = await until('the reinforcement job', () => alice.fineTuning.jobs.retrieve(created.id), (j) => ['succeeded', 'failed', 'cancelled'].includes(j.status), 600_000);
    expect(job.status, JSON.stringify(job.error)).toBe('succeeded');
    const events = (await alice.fineTuning.jobs.listEvents(created.id, { limit: 500 })).data.reverse();
    const rewards = events.flatMap((e) => {
      const data = (e.data ?? {}) as Record<string, unknown>;
      return e.type === 'metrics' && typeof data['train_reward_mean'] === 'number' ? [data] : [];
    });
    // One per step, then the figures training ended on (no evaluation split to score: a GRPO job's last word, #39).
    expect(rewards).toHaveLength(21);
    expect(rewards.at(-1)).toMatchObject({ step: 20 });
    expect(rewards.at(-1)).not.toHaveProperty('total_steps');
    expect(events.find((e) => e.message.startsWith('Training ended at step 20: reward='))).toBeDefined();
    expect(rewards.every((r) => typeof (r['train_rewards'] as Record<string, number>)['has_paris'] === 'number')).toBe(true);
    const mean = (values: Array<Record<string, unknown>>) => values.reduce((sum, r) => sum + (r['train_reward_mean'] as number), 0) / values.length;
    expect(mean(rewards.slice(-5, -1)), JSON.stringify(rewards.map((r) => r['train_reward_mean']))).toBeGreaterThanOrEqual(mean(rewards.slice(0, 4)) + 0.3);
    await expect(bob.fineTuning.jobs.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(bob.fineTuning.jobs.listEvents(created.id)).rejects.toBeInstanceOf(NotFoundError);
    // Its model judges for Alice, never for Bob.
    const judge = { type: 'score_model', name: 'judge', model: job.fine_tuned_model!, range: [-1e300, 1e300], input: [{ role: 'user', content: 'Rate {{sample.output_text}}' }] };
    expect((await alice.fineTuning.alpha.graders.validate({ grader: judge as never })).grader).toMatchObject({ model: job.fine_tuned_model });
    await expect(bob.fineTuning.alpha.graders.validate({ grader: judge as never })).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('a reinforcement job graded by a judge model', { timeout: 600_000 }, () => {
  it('trains, its score_model grader answered by the tiny base model through the worker’s relay', async () => {
    // The grader's judge fields reach the core whole and the core asks the relay the worker opened for the job: every
    // step's reward has the judge's mean, and no answer went unjudged for want of a judge (a score the untrained judge
    // writes out of any range is the judge's doing, and allowed).
    const lines = ['Say a word.', 'Say a letter.', 'Name a color.', 'Count to three.'].map((q) => ({ messages: [{ role: 'user', content: q }], answer: 'Paris' }));
    const file = await alice.files.create({ file: await toFile(Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n')), 'judged.jsonl'), purpose: 'fine-tune' });
    const judge = { type: 'score_model', name: 'judge', model: TINY_MODEL, range: [-1e300, 1e300], input: [{ role: 'user', content: 'Rate {{sample.output_text}} against {{item.answer}}' }] } as const;
    const created = await alice.fineTuning.jobs.create({
      model: TINY_MODEL,
      training_file: file.id,
      seed: 5,
      method: { type: 'reinforcement', reinforcement: { grader: judge as never, hyperparameters: { n_epochs: 1, batch_size: 2, compute_multiplier: 0.5 } } },
    });
    const job = await until('the judged job', () => alice.fineTuning.jobs.retrieve(created.id), (j) => ['succeeded', 'failed', 'cancelled'].includes(j.status), 600_000);
    expect(job.status, JSON.stringify(job.error)).toBe('succeeded');
    const events = (await alice.fineTuning.jobs.listEvents(created.id, { limit: 500 })).data;
    const steps = events.filter((e) => e.type === 'metrics' && typeof (e.data as Record<string, unknown> | null)?.['train_reward_mean'] === 'number');
    expect(steps.length).toBeGreaterThan(0);
    for (const step of steps) expect(typeof ((step.data as Record<string, Record<string, unknown>>)['train_rewards']!['judge'])).toBe('number');
    expect(events.filter((e) => /judge relay|could not be reached|answered [45]\d\d/.test(e.message)).map((e) => e.message)).toEqual([]);
  });
});

describe('reinforcement fine-tuning with the official Python client', { timeout: 600_000 }, () => {
  it('samples under a response_format schema, grades with multi and python graders, counts the answers the python grader could not grade, and keeps the job its owner’s', async () => {
    const script = fileURLToPath(new URL('./openai-rft-client.py', import.meta.url));
    const { stdout } = await promisify(execFile)(process.env.CORE_PYTHON ?? DEFAULT_CORE_PYTHON, [script], {
      env: { ...process.env, OPENAI_BASE_URL: `${urls.openai}/v1`, OPENAI_API_KEY: tokens.alice, OTHER_API_KEY: tokens.bob },
      timeout: 600_000,
    });
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(report).toMatchObject({ status: 'succeeded', run_reward: 1, run_error: 'line 3: ValueError: item 3 is broken', other_user: 404 });
    expect(report['reward_steps']).toBeGreaterThan(0);
    // Sampled under the response_format schema, every answer is JSON that has_e reads: only line 3's 4 answers (compute
    // multiplier 1: 4 a prompt; one epoch) could not be graded, by the python grader.
    expect(report['ungraded'], JSON.stringify(report['ungraded_warnings'])).toBe(4);
    expect(report['response_format']).toMatchObject({ type: 'json_schema', json_schema: { name: 'word' } });
    expect(report['ungraded_warning']).toMatch(/grader score: \d+ of \d+ answers scored 0 because they could not be graded .* line 3: ValueError: item 3 is broken/);
  });
});
