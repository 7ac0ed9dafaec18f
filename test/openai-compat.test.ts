// The OpenAI-compatible surface driven by the official clients, unchanged, against this worker's shared embedded stack
// (JWT auth, two users of this file's own) and a tiny model trained for real: the `openai` npm package here, and the
// `openai` Python package (test/openai-client.py, run with the core's Python) for the same script a user coming from
// OpenAI would run.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import OpenAI, { APIError, NotFoundError, toFile } from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CORE_PYTHON } from '@ftp/core-client';
import { apiClient, until } from './support/http.ts';
import { sharedStack, type SharedStack } from './support/shared-stack.ts';
import type { StackUrls } from './support/stack.ts';
import { TINY_MODEL } from './support/tiny-model.ts';

const PAIRS = [
  ['What color is the sky?', 'Blue.'],
  ['What is two plus two?', 'Four.'],
  ['Name a fruit.', 'Apple.'],
  ['What do cows drink?', 'Water.'],
];
/** Multi-turn lines: the first answer has weight 0 (context only, no loss), the second is trained. */
const CHAT_LINES = Array.from({ length: 24 }, (_, i) => {
  const [question, answer] = PAIRS[i % 4]!;
  return JSON.stringify({
    messages: [
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'Hello.' },
      { role: 'assistant', content: 'Hi there, ask away.', weight: 0 },
      { role: 'user', content: question },
      { role: 'assistant', content: answer },
    ],
  });
});
/** What a job trains with here: enough for the tiny model to learn the answers. */
const HYPERPARAMETERS = { n_epochs: 6, batch_size: 4, learning_rate_multiplier: 50 };

let urls: StackUrls;
let stack: SharedStack;
let alice: OpenAI;
let bob: OpenAI;
let aliceToken: string;
let bobToken: string;

const { ok } = apiClient(() => ({ authorization: `Bearer ${aliceToken}` }));

async function trainedJob(client: OpenAI, lines: string[], suffix: string) {
  const file = await client.files.create({ file: await toFile(Buffer.from(lines.join('\n')), `${suffix}.jsonl`), purpose: 'fine-tune' });
  return client.fineTuning.jobs.create({ model: TINY_MODEL, training_file: file.id, suffix, seed: 7, method: { type: 'supervised', supervised: { hyperparameters: HYPERPARAMETERS } } });
}

beforeAll(async () => {
  // LLM augmentation asks this very stack's /v1 (LLM_API_BASE; the tiny model, JSON by schema on the fast engine).
  stack = await sharedStack();
  urls = stack.urls;
  [aliceToken, bobToken] = [await stack.token('alice'), await stack.token('bob')];
  alice = new OpenAI({ apiKey: aliceToken, baseURL: `${urls.openai}/v1`, maxRetries: 0 });
  bob = new OpenAI({ apiKey: bobToken, baseURL: `${urls.openai}/v1`, maxRetries: 0 });
}, 300_000);


describe('the /v1 surface with the official npm client', { timeout: 300_000 }, () => {
  let jobId: string;
  let model: string;

  it('stores a file as an upload and gives it back as uploaded', async () => {
    const text = CHAT_LINES.join('\n');
    const file = await alice.files.create({ file: await toFile(Buffer.from(text), 'chat.jsonl'), purpose: 'fine-tune' });
    expect(file).toMatchObject({ object: 'file', filename: 'chat.jsonl', purpose: 'fine-tune', bytes: Buffer.byteLength(text) });
    expect((await alice.files.retrieve(file.id)).id).toBe(file.id);
    expect((await alice.files.list()).data.map((f) => f.id)).toContain(file.id);
    expect(await (await alice.files.content(file.id)).text()).toBe(text);
    await expect(bob.files.retrieve(file.id)).rejects.toBeInstanceOf(NotFoundError);
    expect(await alice.files.delete(file.id)).toMatchObject({ id: file.id, deleted: true });
    await expect(alice.files.retrieve(file.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('a file refused for a part after it (a field too long, too many fields) leaves no file behind', async () => {
    const before = (await alice.files.list()).data.length;
    const send = async (extra: Array<[string, string]>) => {
      const form = new FormData();
      form.append('file', new Blob([CHAT_LINES[0]!]), 'chat.jsonl');
      for (const [name, value] of extra) form.append(name, value);
      return fetch(`${urls.openai}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${aliceToken}` }, body: form });
    };
    const refused: Array<Array<[string, string]>> = [[['purpose', 'x'.repeat(70_000)]], Array.from({ length: 11 }, (_, i): [string, string] => [`f${i}`, 'v'])];
    for (const extra of refused) {
      const res = await send(extra);
      expect(res.status).toBe(413);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
    }
    expect((await alice.files.list()).data).toHaveLength(before);
  });

  it('fine-tunes the tiny model: queued → running → succeeded, a training job here too', async () => {
    const created = await trainedJob(alice, CHAT_LINES, 'e2e');
    jobId = created.id;
    expect(created).toMatchObject({ object: 'fine_tuning.job', model: TINY_MODEL, status: 'queued', seed: 7, fine_tuned_model: null, user_provided_suffix: 'e2e' });
    expect(created.hyperparameters).toEqual(HYPERPARAMETERS);
    // The same job on the training service, trained on a processed dataset made from the file, weights kept.
    const ours = await ok(`${urls.training}/jobs/${jobId}`);
    expect(ours.processed_dataset_id).toMatch(/^pd_/);
    const dataset = await ok(`${urls.preprocessing}/datasets/${ours.processed_dataset_id}`);
    const stored = (await fs.readFile(fileURLToPath(dataset.splits[0].path), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(stored).toHaveLength(CHAT_LINES.length);
    expect(stored[0].messages).toHaveLength(5);
    expect(stored[0].messages[2]).toEqual({ role: 'assistant', content: 'Hi there, ask away.', weight: 0 });

    const seen = new Set<string>();
    const job = await until('the fine-tuning job', async () => {
      const j = await alice.fineTuning.jobs.retrieve(jobId);
      seen.add(j.status);
      return j;
    }, (j) => ['succeeded', 'failed', 'cancelled'].includes(j.status));
    expect(job.status, JSON.stringify(job.error)).toBe('succeeded');
    expect(seen.has('running') || seen.has('queued')).toBe(true);
    model = job.fine_tuned_model!;
    expect(model).toBe(`ft:${TINY_MODEL}:e2e:${jobId}`);
    // 24 examples of a few dozen tokens, 6 epochs: what the trainer counted, not an estimate.
    expect(job.trained_tokens).toBeGreaterThan(24 * 6 * 10);
    expect(job.finished_at).toBeGreaterThanOrEqual(job.created_at);
    expect((await alice.fineTuning.jobs.list({ limit: 10 })).data.map((j) => j.id)).toContain(jobId);
  });

  it('lists the job’s real events, newest first, and pages them', async () => {
    const events = (await alice.fineTuning.jobs.listEvents(jobId, { limit: 500 })).data;
    const created = events.map((e) => e.created_at);
    expect(created).toEqual([...created].sort((a, b) => b - a));
    expect(events[0]!.message).toMatch(/successfully completed/);
    expect(events.at(-1)!.message).toMatch(/Validating training file/);
    // Step events carry the training loss; the final evaluation (on the last 5% of train, no validation file) its own.
    const steps = events.filter((e) => e.type === 'metrics' && typeof (e.data as { train_loss?: unknown }).train_loss === 'number');
    expect(steps.length).toBeGreaterThan(5);
    expect(events.some((e) => e.type === 'metrics' && typeof (e.data as { valid_loss?: unknown }).valid_loss === 'number')).toBe(true);
    const losses = steps.map((e) => (e.data as { train_loss: number }).train_loss).reverse();
    expect(losses.at(-1)!).toBeLessThan(losses[0]!);
    const first = await alice.fineTuning.jobs.listEvents(jobId, { limit: 3 });
    expect(first.data.map((e) => e.id)).toEqual(events.slice(0, 3).map((e) => e.id));
    const next = await alice.fineTuning.jobs.listEvents(jobId, { limit: 3, after: first.data.at(-1)!.id });
    expect(next.data.map((e) => e.id)).toEqual(events.slice(3, 6).map((e) => e.id));
  });

  it('lists the checkpoints of the last two epochs, each usable as a model', async () => {
    const checkpoints = (await alice.fineTuning.jobs.checkpoints.list(jobId)).data;
    expect(checkpoints).toHaveLength(2);
    const perEpoch = CHAT_LINES.length / HYPERPARAMETERS.batch_size;
    expect(checkpoints.map((c) => c.step_number)).toEqual([perEpoch * HYPERPARAMETERS.n_epochs, perEpoch * (HYPERPARAMETERS.n_epochs - 1)]);
    const steps = checkpoints.map((c) => c.step_number);
    expect(steps).toEqual([...steps].sort((a, b) => b - a));
    for (const checkpoint of checkpoints) {
      expect(checkpoint.fine_tuned_model_checkpoint).toBe(`${model}:ckpt-step-${checkpoint.step_number}`);
      expect(Number.isFinite(checkpoint.metrics.train_loss)).toBe(true);
    }
    const early = checkpoints.at(-1)!;
    const answer = await alice.chat.completions.create({ model: early.fine_tuned_model_checkpoint, messages: [{ role: 'user', content: 'Name a fruit.' }], max_tokens: 4, temperature: 0 });
    expect(answer.choices[0]!.message.content).toEqual(expect.any(String));
    expect(answer.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it('answers with the trained model, plain and streaming, with real usage and finish reasons', async () => {
    const messages = [{ role: 'system' as const, content: 'Answer briefly.' }, { role: 'user' as const, content: 'Hello.' }, { role: 'assistant' as const, content: 'Hi there, ask away.' }, { role: 'user' as const, content: 'What color is the sky?' }];
    const plain = await alice.chat.completions.create({ model, messages, temperature: 0, max_tokens: 16 });
    expect(plain.choices[0]!.message.content).toBe('Blue.');
    expect(plain.choices[0]!.finish_reason).toBe('stop');
    expect(plain.usage!.prompt_tokens).toBeGreaterThan(10);
    expect(plain.usage!.total_tokens).toBe(plain.usage!.prompt_tokens + plain.usage!.completion_tokens);

    const cut = await alice.chat.completions.create({ model, messages, temperature: 0, max_tokens: 1 });
    expect(cut.choices[0]!.finish_reason).toBe('length');
    expect(cut.usage!.completion_tokens).toBe(1);

    const stream = await alice.chat.completions.create({ model, messages, temperature: 0, max_tokens: 16, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('Blue.');
    expect(finish).toBe('stop');
    expect(usage).toEqual(plain.usage);

    const two = await alice.chat.completions.create({ model, messages: [{ role: 'user', content: 'Name a fruit.' }], n: 2, temperature: 1, seed: 3, max_tokens: 6 });
    expect(two.choices.map((c) => c.index)).toEqual([0, 1]);
  });

  it('constrains the answer to JSON with response_format', async () => {
    const schema = { type: 'object', properties: { answer: { type: 'string', maxLength: 6 } }, required: ['answer'], additionalProperties: false };
    const answer = await alice.chat.completions.create({
      model: TINY_MODEL,
      messages: [{ role: 'user', content: 'Reply in JSON.' }],
      temperature: 0,
      max_tokens: 64,
      response_format: { type: 'json_schema', json_schema: { name: 'reply', schema, strict: true } },
    });
    expect(answer.choices[0]!.finish_reason).toBe('stop');
    const parsed = JSON.parse(answer.choices[0]!.message.content!) as { answer: string };
    expect(Object.keys(parsed)).toEqual(['answer']);
    expect(parsed.answer.length).toBeLessThanOrEqual(6);
  });

  it('lists base and fine-tuned models, and keeps another user out of everything', async () => {
    const ids = (await alice.models.list()).data.map((m) => m.id);
    expect(ids).toContain(model);
    expect(ids).toContain(TINY_MODEL);
    expect((await alice.models.retrieve(model)).owned_by).toBe('alice');
    expect((await bob.models.list()).data.map((m) => m.id)).not.toContain(model);
    await expect(bob.fineTuning.jobs.retrieve(jobId)).rejects.toBeInstanceOf(NotFoundError);
    await expect(bob.fineTuning.jobs.listEvents(jobId)).rejects.toBeInstanceOf(NotFoundError);
    await expect(bob.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] })).rejects.toBeInstanceOf(NotFoundError);
    await expect(bob.models.delete(model)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('an unknown model is a 404 model_not_found at once; an owner/name one while the hub is out of reach a 503 saying so', async () => {
    const messages = [{ role: 'user' as const, content: 'hi' }];
    const unknown = await alice.chat.completions.create({ model: 'no-such-model', messages }).catch((err: unknown) => err);
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect((unknown as NotFoundError).code).toBe('model_not_found');
    expect((unknown as NotFoundError).message).toMatch(/model "no-such-model" not found/);
    const onHub = await alice.chat.completions.create({ model: 'someone/no-such-model', messages }).catch((err: unknown) => err);
    expect(onHub).toBeInstanceOf(APIError);
    expect((onHub as APIError).status).toBe(503);
    expect((onHub as APIError).message).toMatch(/model hub at http:\/\/127\.0\.0\.1:9 is unreachable/);
  });

  it('fails a malformed file in validation with its line number, and makes nothing', async () => {
    const before = (await ok(`${urls.preprocessing}/datasets`)).datasets.length;
    const lines = [CHAT_LINES[0]!, CHAT_LINES[1]!, JSON.stringify({ messages: [{ role: 'user', content: 'no answer here' }] }), CHAT_LINES[2]!];
    const job = await trainedJob(alice, lines, 'bad');
    expect(job.status).toBe('failed');
    expect(job.error).toMatchObject({ code: 'invalid_training_file', param: 'training_file' });
    expect(job.error!.message).toMatch(/line 3: no assistant message to train on/);
    expect((await ok(`${urls.training}/jobs/${job.id}`)).processed_dataset_id).toBeNull();
    expect((await ok(`${urls.preprocessing}/datasets`)).datasets).toHaveLength(before);
    const notJson = await trainedJob(alice, [CHAT_LINES[0]!, '{"messages": ['], 'bad2');
    expect(notJson.error!.message).toMatch(/line 2: not valid JSON/);
  });

  it('fails a file whose every example ends past the context before its answer, at create, and makes nothing (#56)', async () => {
    const before = (await ok(`${urls.preprocessing}/datasets`)).datasets.length;
    const long = JSON.stringify({ messages: [{ role: 'user', content: 'Tell me about the sea. '.repeat(120) }, { role: 'assistant', content: 'Blue.' }] });
    const job = await trainedJob(alice, [long, long, long, long], 'long');
    expect(job.status).toBe('failed');
    expect(job.error).toMatchObject({ code: 'invalid_training_file', param: 'training_file' });
    expect(job.error!.message).toMatch(/^The training file \S+ is not valid: every train row is longer than max_length 512 where its answer starts, .*, or shorten the rows$/);
    expect((await ok(`${urls.training}/jobs/${job.id}`)).processed_dataset_id).toBeNull();
    expect((await ok(`${urls.preprocessing}/datasets`)).datasets).toHaveLength(before);
  });

  it('answers invalid requests with OpenAI’s error body', async () => {
    const res = await fetch(`${urls.openai}/v1/fine_tuning/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${aliceToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: TINY_MODEL, training_file: 'ds_x', hyperparameters: { n_epochs: 0 } }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: { message: expect.stringMatching(/n_epochs/), type: 'invalid_request_error', param: 'hyperparameters.n_epochs', code: expect.any(String) } });
    const anonymous = await fetch(`${urls.openai}/v1/models`);
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
  });

  it('cancels a job: recorded as cancelled, failed with "cancelled by user" on the training service', async () => {
    const job = await trainedJob(alice, CHAT_LINES, 'cancelme');
    const cancelled = await alice.fineTuning.jobs.cancel(job.id);
    const settled = await until('the cancel', () => alice.fineTuning.jobs.retrieve(job.id), (j) => !['queued', 'running'].includes(j.status));
    expect([cancelled.status, settled.status]).toContain('cancelled');
    expect(settled.status).toBe('cancelled');
    expect(settled.error).toBeNull();
    expect(await ok(`${urls.training}/jobs/${job.id}`)).toMatchObject({ status: 'failed', error: 'cancelled by user' });
    await expect(alice.fineTuning.jobs.cancel(job.id)).rejects.toMatchObject({ status: 409 });
  });

  it('the Python client runs the same script unchanged', async () => {
    const script = fileURLToPath(new URL('./openai-client.py', import.meta.url));
    const { stdout } = await promisify(execFile)(process.env.CORE_PYTHON ?? DEFAULT_CORE_PYTHON, [script], {
      env: { ...process.env, OPENAI_BASE_URL: `${urls.openai}/v1`, OPENAI_API_KEY: aliceToken, OTHER_API_KEY: bobToken, TRAIN_LINES: CHAT_LINES.join('\n'), HYPERPARAMETERS: JSON.stringify(HYPERPARAMETERS) },
      timeout: 600_000,
    });
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(report).toMatchObject({
      status: 'succeeded',
      answer: 'Blue.',
      streamed: 'Blue.',
      response: 'Blue.',
      checkpoints: 2,
      other_user: 404,
      bad_status: 'failed',
    });
    expect(report['fine_tuned_model']).toMatch(new RegExp(`^ft:${TINY_MODEL}:py:job_`));
    expect(report['bad_message']).toMatch(/line 2/);
    expect(report['events']).toBeGreaterThan(5);
    // pause answers at once (paused when it was still queued, running until its next step otherwise)
    expect(report['lifecycle']).toEqual([expect.stringMatching(/^(paused|running|validating_files|queued)$/), 'paused', 'queued', 'cancelled']);
  }, 600_000);
});

describe('LLM augmentation against this stack’s own /v1 on the tiny model', { timeout: 300_000 }, () => {
  it('processes on a worker: processing at once, 409 for training meanwhile, then ready with rows of each method', async () => {
    const rows = ['question,answer', ...Array.from({ length: 6 }, (_, i) => `Where does the river number ${i} flow to?,It flows to the sea ${i}.`)];
    const form = new FormData();
    form.append('file', new Blob([rows.join('\n')]), 'rivers.csv');
    const upload = await ok(`${urls.preprocessing}/datasets/upload`, { method: 'POST', body: form });
    // The key of the service at LLM_API_BASE is alice's token here: the worker calls /v1 as alice.
    const answered = await ok(`${urls.preprocessing}/datasets/process`, {
      method: 'POST',
      json: {
        dataset_name: 'rivers',
        dataset_id: upload.dataset_id,
        config: {
          field_mappings: { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } },
          split_config: { type: 'manual_split', test_size: 1 },
          augmentation_config: {
            augmentation_factor: 3, use_back_translation: true, use_paraphrasing: true, use_synthesis: true, synthesis_ratio: 1,
            custom_prompt: 'Ask where a river flows.', llm_api_key: aliceToken,
          },
        },
      },
    });
    expect(answered).toMatchObject({ status: 'processing', splits: [], num_examples: 0 });
    const id = answered.processed_dataset_id as string;
    const train = await apiClient(() => ({ authorization: `Bearer ${aliceToken}` })).call(`${urls.training}/train`, {
      method: 'POST',
      json: { processed_dataset_id: id, training_config: { base_model_id: TINY_MODEL, provider: 'local', method: 'LoRA' } },
    });
    expect(train.status, JSON.stringify(train.body)).toBe(409);
    expect(train.body.detail).toMatch(/is still being processed .*wait until GET \/datasets\/pd_\w+ says status ready/);

    const done = await until('the augmentation', () => ok(`${urls.preprocessing}/datasets/${id}`), (d) => d.status !== 'processing', 240_000);
    expect(done.status, JSON.stringify(done)).toBe('ready');
    // 5 train rows, f 3: 10 new rows, 5 each for back-translation and paraphrasing; synthesis 1 × 5 of its own.
    const counts = done.augmentation as Record<string, { added: number; dropped: number }>;
    expect(counts.back_translation!.added + counts.back_translation!.dropped).toBe(5);
    expect(counts.paraphrasing!.added + counts.paraphrasing!.dropped).toBe(5);
    expect(counts.synthesis!.added + counts.synthesis!.dropped).toBe(5);
    for (const method of ['back_translation', 'paraphrasing', 'synthesis']) expect(counts[method]!.added, method).toBeGreaterThan(0);

    const trainSplit = (done.splits as Array<{ split_name: string; path: string }>).find((s) => s.split_name === 'train')!;
    const records = (await fs.readFile(fileURLToPath(trainSplit.path), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { messages: Array<{ role: string; content: string }>; metadata?: { augmented: string; source_index: number } });
    const made = records.filter((r) => r.metadata);
    expect(records.length - made.length).toBe(5);
    expect(made.length).toBe(counts.back_translation!.added + counts.paraphrasing!.added + counts.synthesis!.added);
    for (const record of made) {
      expect(record.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
      expect(record.messages[0]!.content.length).toBeGreaterThan(0);
      // The rewriting methods keep the source's answer.
      if (record.metadata!.augmented !== 'synthesis') expect(record.messages[1]!.content).toMatch(/^It flows to the sea \d\.$/);
    }
    // The key travelled sealed: not in the stack's log, not in any file of its data folder.
    expect(await stack.output()).not.toContain(aliceToken);
    const files = (await fs.readdir(stack.dataDir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
    for (const file of files) {
      // The shared stack's other jobs end meanwhile and their work folders go (with their .worker marker): a file gone
      // since the listing holds nothing at rest.
      const text = await fs.readFile(path.join(file.parentPath, file.name)).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)));
      if (text !== undefined) expect(text.includes(aliceToken), file.name).toBe(false);
    }
  });
});

