// /v1 reinforcement fine-tuning up to the queue, on a real app and platform (no worker): OpenAI's grader and
// hyperparameters become a GRPO job whose one reward is the grader, the file's lines become prompts with their fields
// as the grader's item, and what is not available here is refused by name.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { TestPlatform } from '@ftp/platform/testing';
import { tinyModelsDir, TINY_MODEL } from '../../../test/support/tiny-model.ts';
import { openAiTestApp, uploadFineTuneFile, type OpenAiTestApp } from './support.ts';

let opened: OpenAiTestApp;
let platform: TestPlatform;
let app: FastifyInstance;

beforeAll(async () => {
  opened = await openAiTestApp(await tinyModelsDir());
  ({ platform, app } = opened);
}, 180_000);

afterAll(() => opened?.close());

async function fileOf(lines: unknown[]): Promise<string> {
  const file = await uploadFineTuneFile(app, 'rft.jsonl', lines.map((l) => JSON.stringify(l)).join('\n'));
  expect(file.statusCode).toBe(200);
  return file.json().id as string;
}

const LINES = [
  { messages: [{ role: 'user', content: 'Capital of France?' }], answer: 'Paris', meta: { country: 'France' } },
  { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Capital of Italy?' }], answer: 'Rome', meta: { country: 'Italy' } },
];
const EXACT = { type: 'string_check', name: 'exact', input: '{{sample.output_text}}', reference: '{{item.answer}}', operation: 'eq' };
const CLOSE = { type: 'text_similarity', name: 'close', input: '{{sample.output_text}}', reference: '{{item.answer}}', evaluation_metric: 'fuzzy_match' };

const create = async (reinforcement: Record<string, unknown>, lines: unknown[] = LINES, validation?: unknown[]) =>
  app.inject({
    method: 'POST',
    url: '/v1/fine_tuning/jobs',
    payload: { model: TINY_MODEL, training_file: await fileOf(lines), ...(validation ? { validation_file: await fileOf(validation) } : {}), seed: 3, method: { type: 'reinforcement', reinforcement } },
  });

describe('a reinforcement fine-tuning job', () => {
  it('is a GRPO job whose reward is the grader, its lines prompts with their fields as the item', async () => {
    const grader = { type: 'multi', name: 'score', calculate_output: '0.7 * exact + 0.3 * close', graders: { exact: EXACT, close: CLOSE } };
    const res = await create({ grader, hyperparameters: { compute_multiplier: 2, batch_size: 2, n_epochs: 3, eval_interval: 5, eval_samples: 1 } }, LINES, LINES);
    expect(res.statusCode, res.body).toBe(200);
    const job = res.json();
    expect(job).toMatchObject({
      status: 'queued',
      method: { type: 'reinforcement', reinforcement: { grader, hyperparameters: { n_epochs: 3, batch_size: 2, learning_rate_multiplier: 1, compute_multiplier: 2, eval_interval: 5, eval_samples: 1 } } },
    });
    const row = (await platform.jobs.get('local', job.id))!;
    const config = row.training_config as Record<string, any>;
    expect(config.trainer_type).toBe('grpo');
    // the model store holds the tiny model: a local model, not the hub's (#39: Compare showed provider hub)
    expect(config.provider).toBe('local');
    expect(config.reward_config).toEqual([{ type: 'multi', name: 'score', calculate_output: '0.7 * exact + 0.3 * close', graders: {
      exact: { type: 'string_check', name: 'exact', input: '{{sample.output_text}}', reference: '{{item.answer}}', operation: 'eq' },
      close: { type: 'text_similarity', name: 'close', input: '{{sample.output_text}}', reference: '{{item.answer}}', evaluation_metric: 'fuzzy_match' },
    } }]);
    // 2 prompts a step, 8 answers each: 16 completions, as device batch × accumulation.
    expect(config.hyperparameters).toMatchObject({ num_generations: 8, epochs: 3, learning_rate: 2e-4, beta: 0, max_grad_norm: 1 });
    expect(config.hyperparameters.batch_size * config.hyperparameters.gradient_accumulation_steps).toBe(16);
    expect(config.eval_config).toMatchObject({ eval_strategy: 'steps', eval_steps: 5 });
    const dataset = (await platform.datasets.getProcessed('local', row.processed_dataset_id!))!;
    expect(dataset.processing_mode).toBe('prompt_only');
    expect(dataset.columns).toEqual(['prompt', 'answer', 'meta']);
    expect(dataset.splits.find((s) => s.split_name === 'test')!.num_rows).toBe(1); // eval_samples
    expect(dataset.splits[0]!.samples[1]).toEqual({ prompt: LINES[1]!.messages, answer: 'Rome', meta: { country: 'Italy' } });
  });

  it('with response_format: the JSON Schema its sampled answers follow goes to the job and comes back on it', async () => {
    const response_format = { type: 'json_schema', json_schema: { name: 'capital', strict: true, schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };
    const grader = { ...EXACT, input: '{{sample.output_json.city}}' };
    const res = await create({ grader, response_format });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().method.reinforcement).toMatchObject({ grader, response_format });
    const row = (await platform.jobs.get('local', res.json().id))!;
    expect((row.training_config as Record<string, unknown>).response_format).toEqual(response_format);
    const listed = await app.inject({ method: 'GET', url: `/v1/fine_tuning/jobs/${res.json().id}` });
    expect(listed.json().method.reinforcement.response_format).toEqual(response_format);
  });

  it.each([
    ['reasoning_effort', { grader: EXACT, hyperparameters: { reasoning_effort: 'high' } }, 'method.reinforcement.hyperparameters.reasoning_effort', /Must be one of 'default'/],
    ['a formula naming no grader', { grader: { type: 'multi', name: 'm', calculate_output: 'exact + other', graders: { exact: EXACT } } }, 'method.reinforcement.grader.calculate_output', /"other" names no grader/],
    ['a template naming no variable', { grader: { ...EXACT, reference: '{{ os.environ.HOME }}' } }, 'method.reinforcement.grader.reference', /is not a variable/],
    ['a response_format other than json_schema', { grader: EXACT, response_format: { type: 'json_object' } }, 'method.reinforcement.response_format.type', /json_schema/],
  ])('with %s is a 400 naming it', async (_, reinforcement, param, message) => {
    const res = await create(reinforcement);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param, message: expect.stringMatching(message) });
  });

  it('a judge the owner may not use is a 404; one of this stack’s models judges a score_model reward', async () => {
    const judged = (model: string) => ({ grader: { type: 'multi', name: 'm', calculate_output: 'judge', graders: { judge: { type: 'score_model', name: 'judge', model, input: [{ role: 'user', content: 'Rate {{sample.output_text}} against {{item.answer}}' }] } } } });
    const other = await create(judged(`ft:${TINY_MODEL}:custom:job_${'0'.repeat(24)}`));
    expect(other.statusCode).toBe(404);
    expect(other.json().error).toMatchObject({ code: 'model_not_found' });
    const ok = await create(judged(TINY_MODEL));
    expect(ok.statusCode, ok.body).toBe(200);
    const row = (await platform.jobs.get('local', ok.json().id))!;
    expect((row.training_config as { reward_config: unknown[] }).reward_config).toEqual([{ type: 'multi', name: 'm', calculate_output: 'judge', graders: {
      judge: { type: 'score_model', name: 'judge', model: TINY_MODEL, input: [{ role: 'user', content: 'Rate {{sample.output_text}} against {{item.answer}}' }], range: [0, 1] },
    } }]);
  });

  it('reading a field no line has is a 400 at submit naming the column', async () => {
    const res = await create({ grader: { ...EXACT, reference: '{{item.gold}}' } });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).toMatch(/column "gold" is not in the dataset; its columns are: prompt, answer, meta/);
  });

  it.each([
    ['a line without messages', { answer: 'x' }, /line 2: a reinforcement job needs lines with "messages"/],
    ['a line ending with the answer', { messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }], answer: 'a' }, /line 2: messages must end with the user’s turn/],
  ])('with %s fails at that line', async (_, bad, message) => {
    const res = await create({ grader: EXACT }, [LINES[0], bad]);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'failed', error: { code: 'invalid_training_file', message: expect.stringMatching(message) } });
  });
});
