// Bad requests and the exact 422 detail each one gets, checked two ways: over HTTP through
// fastify-type-provider-zod (fastifyValidationDetail) and directly on the zod issues (validationDetail).
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { SERVICE_NAMES, validationDetail, type RequestLocation, type ServiceName } from '../src/index.ts';
import { buildContractApp, findRoute, urlOf } from './contract-app.ts';
import { batchRequest, edit, evaluationRequest, exportRequest, processRequest, trainRequest } from './fixtures.ts';

const UNPROCESSABLE = 422;

interface InvalidCase {
  name: string;
  service: ServiceName;
  operation: string;
  body?: unknown;
  params?: Record<string, string>;
  query?: Record<string, string>;
  loc: string[];
  type: string;
  /** Further detail entries expected after the first, as [loc, type]. */
  more?: Array<[string[], string]>;
  /** Only the raw input can tell an absent enum value or discriminator from a wrong one. */
  needsInput?: true;
  status: number;
}

const fm = ['config', 'field_mappings'] as const;
const split = ['config', 'split_config'] as const;
const hp = ['training_config', 'hyperparameters'] as const;
const tc = ['training_config'] as const;
const lm = { user_field: { type: 'column', value: 'q' }, assistant_field: { type: 'column', value: 'a' } };
const grpo = (rewards: unknown) => edit(edit(trainRequest, [...tc, 'trainer_type'], 'grpo'), [...tc, 'reward_config'], rewards);
const conversation = (...messages: unknown[]) => ({ ...batchRequest, messages: [messages] });

const process = (name: string, body: unknown, loc: string[], type: string, extra: Partial<InvalidCase> = {}): InvalidCase =>
  ({ name, service: 'preprocessing', operation: 'processDataset', body, loc: ['body', ...loc], type, status: UNPROCESSABLE, ...extra });
const train = (name: string, body: unknown, loc: string[], type: string, extra: Partial<InvalidCase> = {}): InvalidCase =>
  ({ name, service: 'training', operation: 'startTraining', body, loc: ['body', ...loc], type, status: UNPROCESSABLE, ...extra });
const exporting = (name: string, body: unknown, loc: string[], type: string, extra: Partial<InvalidCase> = {}): InvalidCase =>
  ({ name, service: 'export', operation: 'createExport', body, loc: ['body', ...loc], type, status: UNPROCESSABLE, ...extra });
const evaluate = (name: string, body: unknown, loc: string[], type: string, extra: Partial<InvalidCase> = {}): InvalidCase =>
  ({ name, service: 'inference', operation: 'evaluateModel', body, loc: ['body', ...loc], type, status: UNPROCESSABLE, ...extra });
const batch = (name: string, body: unknown, loc: string[], type: string, extra: Partial<InvalidCase> = {}): InvalidCase =>
  ({ name, service: 'inference', operation: 'runBatchInference', body, loc: ['body', ...loc], type, status: UNPROCESSABLE, ...extra });

const cases: InvalidCase[] = [
  // preprocessing: POST /datasets/process
  process('dataset_name absent', edit(processRequest, ['dataset_name']), ['dataset_name'], 'missing'),
  process('config absent', edit(processRequest, ['config']), ['config'], 'missing'),
  process('dataset_source not upload or hub', { ...processRequest, dataset_source: 'ftp' }, ['dataset_source'], 'invalid_value'),
  process('unknown processing_mode', { ...processRequest, processing_mode: 'chat' }, ['processing_mode'], 'invalid_value'),
  process('unknown top-level field', { ...processRequest, dataset_split: 'train' }, ['dataset_split'], 'unrecognized_keys'),
  process('user_field absent for language_modeling', edit(processRequest, [...fm, 'user_field']), [...fm, 'user_field'], 'missing'),
  process('preference without rejected_field', { ...edit(processRequest, [...fm], { ...lm, chosen_field: { type: 'column', value: 'c' } }), processing_mode: 'preference' }, [...fm, 'rejected_field'], 'missing'),
  process('mapping type absent', edit(processRequest, [...fm, 'user_field', 'type']), [...fm, 'user_field', 'type'], 'missing', { needsInput: true }),
  process('mapping type misspelt', edit(processRequest, [...fm, 'user_field', 'type'], 'colum'), [...fm, 'user_field', 'type'], 'invalid_value'),
  process('user_field given as a bare string', edit(processRequest, [...fm, 'user_field'], 'question'), [...fm, 'user_field'], 'invalid_type'),
  process('second part of a multimodal user_field lacks value', edit(processRequest, [...fm, 'user_field'], [{ type: 'image', value: 'img' }, { type: 'column' }]), [...fm, 'user_field', '1', 'value'], 'missing'),
  process('unknown field_mappings key', edit(processRequest, [...fm, 'question_field'], { type: 'column', value: 'q' }), [...fm, 'question_field'], 'unrecognized_keys'),
  process('empty column name', edit(processRequest, [...fm, 'assistant_field', 'value'], ''), [...fm, 'assistant_field', 'value'], 'too_small'),
  process('unknown split type', edit(processRequest, [...split], { type: 'random_split' }), [...split, 'type'], 'invalid_value'),
  process('split type absent', edit(processRequest, [...split], { sample_size: 10 }), [...split, 'type'], 'missing', { needsInput: true }),
  process('test_size zero', edit(processRequest, [...split], { type: 'manual_split', test_size: 0 }), [...split, 'test_size'], 'too_small'),
  process('fractional row count as test_size', edit(processRequest, [...split], { type: 'manual_split', test_size: 2.5 }), [...split, 'test_size'], 'custom'),
  process('hub_split without test_split', edit(processRequest, [...split], { type: 'hub_split', train_split: 'train' }), [...split, 'test_split'], 'missing'),
  process('sample_size as text', edit(processRequest, [...split], { type: 'no_split', sample_size: 'ten' }), [...split, 'sample_size'], 'invalid_type'),
  process('manual split field on no_split', edit(processRequest, [...split], { type: 'no_split', test_size: 0.2 }), [...split, 'test_size'], 'unrecognized_keys'),
  process('augmentation_factor below 1', edit(processRequest, ['config', 'augmentation_config', 'augmentation_factor'], 0.5), ['config', 'augmentation_config', 'augmentation_factor'], 'too_small'),
  process('use_eda as text', edit(processRequest, ['config', 'augmentation_config', 'use_eda'], 'yes'), ['config', 'augmentation_config', 'use_eda'], 'invalid_type'),
  process('body is an array', [processRequest], [], 'invalid_type'),
  {
    name: 'processed_dataset_id longer than 256 characters',
    service: 'preprocessing',
    operation: 'getDataset',
    params: { processed_dataset_id: 'x'.repeat(300) },
    loc: ['path', 'processed_dataset_id'],
    type: 'too_big',
    status: UNPROCESSABLE,
  },

  // training: POST /train
  train('processed_dataset_id absent', edit(trainRequest, ['processed_dataset_id']), ['processed_dataset_id'], 'missing'),
  train('base_model_id absent', edit(trainRequest, [...tc, 'base_model_id']), [...tc, 'base_model_id'], 'missing'),
  train('learning_rate zero', edit(trainRequest, [...hp, 'learning_rate'], 0), [...hp, 'learning_rate'], 'too_small'),
  train('learning_rate as text', edit(trainRequest, [...hp, 'learning_rate'], '2e-4'), [...hp, 'learning_rate'], 'invalid_type'),
  train('batch_size zero', edit(trainRequest, [...hp, 'batch_size'], 0), [...hp, 'batch_size'], 'too_small'),
  train('batch_size not whole', edit(trainRequest, [...hp, 'batch_size'], 1.5), [...hp, 'batch_size'], 'invalid_type'),
  train('epochs zero', edit(trainRequest, [...hp, 'epochs'], 0), [...hp, 'epochs'], 'too_small'),
  train('max_steps below -1', edit(trainRequest, [...hp, 'max_steps'], -2), [...hp, 'max_steps'], 'too_small'),
  train('max_steps beyond a 32-bit integer (2^53 - 1 made a count no response can carry)', edit(trainRequest, [...hp, 'max_steps'], 2 ** 53 - 1), [...hp, 'max_steps'], 'too_big'),
  train('hub_token with a character no HTTP header carries', { ...trainRequest, hub_token: 'hf_ẞecret' }, ['hub_token'], 'invalid_format'),
  train('from_checkpoint_step beyond a 32-bit integer', edit(edit(trainRequest, [...tc, 'from_job'], 'job_01'), [...tc, 'from_checkpoint_step'], 2 ** 31), [...tc, 'from_checkpoint_step'], 'too_big'),
  train('lora_rank zero', edit(trainRequest, [...hp, 'lora_rank'], 0), [...hp, 'lora_rank'], 'too_small'),
  train('lora_dropout of 1', edit(trainRequest, [...hp, 'lora_dropout'], 1), [...hp, 'lora_dropout'], 'too_big'),
  train('misspelt hyperparameter', edit(trainRequest, [...hp, 'learning_rat'], 0.001), [...hp, 'learning_rat'], 'unrecognized_keys'),
  train('unknown scheduler', edit(trainRequest, [...hp, 'lr_scheduler_type'], 'cosin'), [...hp, 'lr_scheduler_type'], 'invalid_value'),
  train('method in lower case', edit(trainRequest, [...tc, 'method'], 'qlora'), [...tc, 'method'], 'invalid_value'),
  train('unknown trainer_type', edit(trainRequest, [...tc, 'trainer_type'], 'ppo'), [...tc, 'trainer_type'], 'invalid_value'),
  train('hub export without hub_repo_id', edit(trainRequest, [...tc, 'export_config', 'destination'], 'hub'), [...tc, 'export_config', 'hub_repo_id'], 'missing'),
  train('unknown GGUF quantization', edit(trainRequest, [...tc, 'export_config', 'gguf_quantization'], 'q5'), [...tc, 'export_config', 'gguf_quantization'], 'invalid_value'),
  train('log_model as a boolean', edit(trainRequest, [...tc, 'tracker_config', 'log_model'], true), [...tc, 'tracker_config', 'log_model'], 'invalid_value'),
  train('grpo without rewards', edit(grpo([]), [...tc, 'reward_config']), [...tc, 'reward_config'], 'missing'),
  train('unknown reward type', grpo([{ type: 'regex', name: 'r' }]), [...tc, 'reward_config', '0', 'type'], 'invalid_value'),
  train('string_check without reference_field', grpo([{ type: 'string_check', name: 'r' }]), [...tc, 'reward_config', '0', 'reference_field'], 'missing'),
  train('grader template naming no variable', grpo([{ type: 'string_check', name: 'r', reference: '{{os.environ}}' }]), [...tc, 'reward_config', '0', 'reference'], 'custom'),
  train('multi formula naming no grader', grpo([{ type: 'multi', name: 'm', calculate_output: 'a + b', graders: { a: { type: 'python', name: 'a', source: 'def grade(s, i): return 1' } } }]), [...tc, 'reward_config', '0', 'calculate_output'], 'custom'),
  train('multi formula that is code', grpo([{ type: 'multi', name: 'm', calculate_output: "__import__('os')", graders: { a: { type: 'python', name: 'a', source: 'x' } } }]), [...tc, 'reward_config', '0', 'calculate_output'], 'custom'),
  train('a grpo loss for dpo', edit(edit(trainRequest, [...tc, 'trainer_type'], 'dpo'), [...tc, 'hyperparameters', 'loss_type'], 'dapo'), [...tc, 'hyperparameters', 'loss_type'], 'invalid_value'),
  train('a response_format for sft', edit(trainRequest, [...tc, 'response_format'], { type: 'json_schema', json_schema: { name: 'a', schema: { type: 'object' } } }), [...tc, 'response_format'], 'invalid_value'),
  train('a response_format with no schema', edit(grpo([{ type: 'string_check', name: 'r', reference_field: 'answer' }]), [...tc, 'response_format'], { type: 'json_schema', json_schema: { name: 'a' } }), [...tc, 'response_format', 'json_schema', 'schema'], 'missing'),
  train('passing label not among labels', grpo([{ type: 'label_model', name: 'r', model: 'm', prompt: 'p', labels: ['a', 'b'], passing_labels: ['c'] }]), [...tc, 'reward_config', '0', 'passing_labels', '0'], 'custom'),
  train('empty job_name', { ...trainRequest, job_name: '' }, ['job_name'], 'too_small'),
  train('hub_token as a number', { ...trainRequest, hub_token: 5 }, ['hub_token'], 'invalid_type'),

  // export: POST /exports, GET /exports/{job_id}/download
  exporting('job_id absent', edit(exportRequest, ['job_id']), ['job_id'], 'missing'),
  exporting('hub destination without repo or token', { job_id: 'job_01', destination: ['hub'] }, ['hub_repo_id'], 'missing', { more: [[['body', 'hub_token'], 'missing']] }),
  exporting('hub destination with an empty token', { ...exportRequest, destination: ['hub'], hub_token: '' }, ['hub_token'], 'missing'),
  exporting('unknown destination', { ...exportRequest, destination: ['cloud', 's3'] }, ['destination', '1'], 'invalid_value'),
  exporting('no destination', { ...exportRequest, destination: [] }, ['destination'], 'too_small'),
  exporting('unknown export_type', { ...exportRequest, export_type: 'safetensors' }, ['export_type'], 'invalid_value'),
  exporting('hub_repo_id without owner', { ...exportRequest, destination: ['hub'], hub_repo_id: 'gemma-support' }, ['hub_repo_id'], 'invalid_format'),
  {
    name: 'download without type',
    service: 'export',
    operation: 'downloadExport',
    params: { job_id: 'job_01' },
    loc: ['query', 'type'],
    type: 'missing',
    needsInput: true,
    status: UNPROCESSABLE,
  },
  {
    name: 'download of a checkpoint_step beyond a 32-bit integer (a database error once)',
    service: 'export',
    operation: 'downloadExport',
    params: { job_id: 'job_01' },
    query: { type: 'adapter', checkpoint_step: '2147483648' },
    loc: ['query', 'checkpoint_step'],
    type: 'too_big',
    status: UNPROCESSABLE,
  },
  {
    name: 'download of an unknown type',
    service: 'export',
    operation: 'downloadExport',
    params: { job_id: 'job_01' },
    query: { type: 'zip' },
    loc: ['query', 'type'],
    type: 'invalid_value',
    status: UNPROCESSABLE,
  },

  // inference: POST /evaluation, POST /inference/batch
  evaluate('metrics and task_type together', { ...evaluationRequest, task_type: 'qa' }, ['task_type'], 'custom'),
  evaluate('unknown metric', { ...evaluationRequest, metrics: ['rouge', 'wer'] }, ['metrics', '1'], 'invalid_value'),
  evaluate('unknown task_type', { ...edit(evaluationRequest, ['metrics']), task_type: 'chat' }, ['task_type'], 'invalid_value'),
  evaluate('max_samples zero', { ...evaluationRequest, max_samples: 0 }, ['max_samples'], 'too_small'),
  evaluate('dataset_id absent', edit(evaluationRequest, ['dataset_id']), ['dataset_id'], 'missing'),
  evaluate('adapter without job_id', edit(evaluationRequest, ['job_id']), ['job_id'], 'missing'),
  evaluate('base model without base_model_id', { ...edit(evaluationRequest, ['base_model_id']), model_source: 'base' }, ['base_model_id'], 'missing'),
  evaluate('unknown model_source', { ...evaluationRequest, model_source: 'gguf' }, ['model_source'], 'invalid_value'),
  evaluate('top_p above 1', { ...evaluationRequest, top_p: 1.5 }, ['top_p'], 'too_big'),
  evaluate('checkpoint_step beyond a 32-bit integer', { ...evaluationRequest, checkpoint_step: 2 ** 31 }, ['checkpoint_step'], 'too_big'),
  evaluate('hub_token with a space', { ...evaluationRequest, hub_token: 'hf abc' }, ['hub_token'], 'invalid_format'),
  evaluate('negative temperature', { ...evaluationRequest, temperature: -1 }, ['temperature'], 'too_small'),
  batch('messages absent', edit(batchRequest, ['messages']), ['messages'], 'missing'),
  batch('no conversations', { ...batchRequest, messages: [] }, ['messages'], 'too_small'),
  batch('an empty conversation', { ...batchRequest, messages: [[]] }, ['messages', '0'], 'too_small'),
  batch('messages as one string', { ...batchRequest, messages: 'hi' }, ['messages'], 'invalid_type'),
  batch('unknown role', conversation({ role: 'user', content: 'hi' }, { role: 'bot', content: 'x' }), ['messages', '0', '1', 'role'], 'invalid_value'),
  batch('message without content', conversation({ role: 'user' }), ['messages', '0', '0', 'content'], 'missing'),
  batch('content as a number', conversation({ role: 'user', content: 5 }), ['messages', '0', '0', 'content'], 'invalid_type'),
  batch('unknown content part type', conversation({ role: 'user', content: [{ type: 'video', video: 'v' }] }), ['messages', '0', '0', 'content', '0', 'type'], 'invalid_value'),
  batch('text part without text', conversation({ role: 'user', content: [{ type: 'image', image: 'i' }, { type: 'text' }] }), ['messages', '0', '0', 'content', '1', 'text'], 'missing'),
  batch('unknown message field', conversation({ role: 'user', content: 'hi', name: 'alice' }), ['messages', '0', '0', 'name'], 'unrecognized_keys'),
];

const apps = new Map<ServiceName, FastifyInstance>();
beforeAll(async () => {
  for (const service of SERVICE_NAMES) apps.set(service, await buildContractApp(service));
});
afterAll(async () => {
  for (const app of apps.values()) await app.close();
});

function expectedDetail(invalid: InvalidCase): Array<{ loc: string[]; type: string }> {
  return [{ loc: invalid.loc, type: invalid.type }, ...(invalid.more ?? []).map(([loc, type]) => ({ loc, type }))];
}

/** The part of the request the case breaks, its location name and the schema checking it. */
function brokenPart(invalid: InvalidCase): [RequestLocation, unknown, z.ZodType] {
  const schema = findRoute(invalid.service, invalid.operation).schema;
  if (invalid.body !== undefined) return ['body', invalid.body, schema.body as z.ZodType];
  if (invalid.loc[0] === 'query') return ['query', invalid.query ?? {}, schema.querystring as z.ZodType];
  return ['path', invalid.params ?? {}, schema.params as z.ZodType];
}

describe('invalid requests', () => {
  it('the table is large enough to mean something', () => {
    expect(cases.length).toBeGreaterThanOrEqual(35);
    expect(new Set(cases.map((invalid) => invalid.name)).size).toBe(cases.length);
  });

  it.each(cases)('$service $operation: $name → $status at $loc ($type)', async (invalid) => {
    const route = findRoute(invalid.service, invalid.operation);
    const response = await apps.get(invalid.service)!.inject({
      method: route.method as 'GET',
      url: urlOf(route, invalid.params ?? { job_id: 'job_01', processed_dataset_id: 'pd_01' }, invalid.query),
      ...(invalid.body === undefined ? {} : { payload: invalid.body as object }),
    });
    expect(response.statusCode).toBe(invalid.status);
    const detail = (response.json() as { detail: Array<{ loc: string[]; msg: string; type: string }> }).detail;
    expect(detail.map(({ loc, type }) => ({ loc, type }))).toEqual(expectedDetail(invalid));
    for (const entry of detail) expect(entry.msg).toMatch(/\w{3,}/);

    // The same detail straight from the zod issues, as a service with its own validator compiler builds it.
    const [location, input, schema] = brokenPart(invalid);
    const issues = schema.safeParse(input).error?.issues ?? [];
    expect(validationDetail(location, issues, input)).toEqual(detail);
    const withoutInput = validationDetail(location, issues).map(({ loc, type }) => ({ loc, type }));
    if (invalid.needsInput) expect(withoutInput).not.toEqual(expectedDetail(invalid));
    else expect(withoutInput).toEqual(expectedDetail(invalid));
  });
});

describe('validationDetail messages', () => {
  it('says what was expected in plain words', () => {
    const { body, loc } = { body: conversation({ role: 'user', content: 5 }), loc: ['messages', '0', '0', 'content'] };
    const schema = findRoute('inference', 'runBatchInference').schema.body as z.ZodType;
    const [entry] = validationDetail('body', schema.safeParse(body).error?.issues ?? [], body);
    expect(entry).toEqual({ loc: ['body', ...loc], msg: 'Expected string or array, received number.', type: 'invalid_type' });
  });

  it('names the allowed values and the unknown field', () => {
    const schema = findRoute('training', 'startTraining').schema.body as z.ZodType;
    const body = edit(edit(trainRequest, [...tc, 'method'], 'qlora'), [...hp, 'learning_rat'], 1);
    const messages = validationDetail('body', schema.safeParse(body).error?.issues ?? [], body).map((entry) => entry.msg);
    expect(messages).toContain("Must be one of 'Full', 'LoRA', 'QLoRA'.");
    expect(messages).toContain('Unknown field "learning_rat"; remove it or check its spelling.');
  });

  it('keeps the sentence of a rule the schema states itself', () => {
    const schema = findRoute('inference', 'evaluateModel').schema.body as z.ZodType;
    const body = { ...evaluationRequest, task_type: 'qa' };
    const [entry] = validationDetail('body', schema.safeParse(body).error?.issues ?? [], body);
    expect(entry?.msg).toBe('send either metrics or task_type, not both');
  });
});
