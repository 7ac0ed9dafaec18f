// /v1/batches, OpenAI's Batch API, driven by both official SDKs unchanged against a real app, platform and worker
// (the tiny models, the fast engine): each answered line is what the same request to /v1/chat/completions or
// /v1/responses answers, in OpenAI's output-file line; a line that fails is an error line with the status and body its
// request would have got; a file that is not a batch file fails the batch, naming its lines; cancel stops it; a batch
// whose worker died goes on elsewhere from its first line not answered, answering no line twice.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { newId } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { DEFAULT_CORE_PYTHON } from '@ftp/core-client';
import { batchQueue } from '@ftp/jobs/queues';
import { recoverOrphans } from '@ftp/jobs/runtime';
import { startWorker, type WorkerHandle } from '@ftp/worker';
import { buildOpenAiApp } from '@ftp/openai';
import { toolModelsDir, TINY_MODEL } from './support/tiny-model.ts';

let platform: TestPlatform;
let worker: WorkerHandle;
let app: FastifyInstance;
let client: OpenAI;

beforeAll(async () => {
  platform = await openTestPlatform({ MODELS_DIR: await toolModelsDir(), FAST_ENGINE_QUANTIZATION: 'f16', FAST_ENGINE_THREADS: '1', HF_ENDPOINT: 'http://127.0.0.1:9' });
  worker = await startWorker(platform, { queues: ['infer', 'batch'] });
  app = await buildOpenAiApp(platform);
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  client = new OpenAI({ baseURL: `${address}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 300_000);
afterAll(async () => {
  await app?.close();
  await worker?.stop();
  await platform?.close();
});

type Line = { custom_id: string; method: 'POST'; url: string; body: Record<string, unknown> };
const chatLine = (custom_id: string, content: string, extra: Record<string, unknown> = {}): Line =>
  ({ custom_id, method: 'POST', url: '/v1/chat/completions', body: { model: TINY_MODEL, messages: [{ role: 'user', content }], temperature: 0, max_tokens: 6, ...extra } });
const jsonl = (lines: unknown[]) => lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n';

async function batchFile(lines: unknown[]): Promise<string> {
  return (await client.files.create({ file: await toFile(Buffer.from(jsonl(lines)), 'batch.jsonl'), purpose: 'batch' })).id;
}

/** The batch once it has ended (it is polled: a worker answers it). */
async function ended(batchId: string): Promise<OpenAI.Batch> {
  let batch = await client.batches.retrieve(batchId);
  await expect.poll(async () => (batch = await client.batches.retrieve(batchId)).status, { timeout: 240_000, interval: 250 })
    .toMatch(/^(completed|failed|cancelled|expired)$/);
  return batch;
}

async function fileLines(fileId: string | null | undefined): Promise<Array<Record<string, any>>> {
  if (!fileId) return [];
  const text = await (await client.files.content(fileId)).text();
  return text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);
}

describe('a batch of chat completions (npm SDK)', { timeout: 300_000 }, () => {
  it('answers each line as /v1/chat/completions does; failing lines are error lines with the status their request would get', async () => {
    const good = [chatLine('q-paris', 'The capital of France is'), chatLine('q-rome', 'The capital of Italy is'), chatLine('q-two', 'Say two words.', { n: 2 })];
    const unknownModel = { ...chatLine('q-nomodel', 'Hi'), body: { ...chatLine('', 'Hi').body, model: 'no-such-model' } };
    const badField = chatLine('q-hot', 'Hi', { temperature: 5 });
    const input = await batchFile([good[0], unknownModel, good[1], badField, good[2]]);
    const created = await client.batches.create({ input_file_id: input, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { run: 'eval-1' } });
    expect(created).toMatchObject({ id: expect.stringMatching(/^batch_/), object: 'batch', status: 'validating', input_file_id: input, metadata: { run: 'eval-1' }, output_file_id: null });
    expect(created.expires_at! - created.created_at).toBe(24 * 3600);

    const batch = await ended(created.id);
    expect(batch).toMatchObject({ status: 'completed', request_counts: { total: 5, completed: 3, failed: 2 }, errors: null });
    expect(batch.in_progress_at).toEqual(expect.any(Number));
    expect(batch.completed_at).toEqual(expect.any(Number));

    const output = await fileLines(batch.output_file_id);
    expect(output.map((l) => l.custom_id)).toEqual(['q-paris', 'q-rome', 'q-two']);
    for (const [i, line] of output.entries()) {
      expect(line).toMatchObject({ id: expect.stringMatching(/^batch_req_/), error: null, response: { status_code: 200, request_id: expect.any(String), body: { object: 'chat.completion', model: TINY_MODEL } } });
      // The same request, sent alone, answers the same (greedy decoding on the same engine).
      const alone = await client.chat.completions.create(good[i]!.body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
      expect(line.response.body.choices.map((c: { message: { content: string } }) => c.message.content)).toEqual(alone.choices.map((c) => c.message.content));
      expect(line.response.body.usage).toEqual(alone.usage);
    }
    expect(output[2]!.response.body.choices).toHaveLength(2);

    const errors = await fileLines(batch.error_file_id);
    expect(errors.map((l) => [l.custom_id, l.response.status_code, l.response.body.error.type])).toEqual([
      ['q-nomodel', 404, 'invalid_request_error'],
      ['q-hot', 400, 'invalid_request_error'],
    ]);
    expect(errors[0]!.response.body.error.code).toBe('model_not_found');
    expect(errors[1]!.response.body.error.param).toBe('temperature');

    // Output files are files of purpose batch_output; the batch is listed.
    const outputs = (await client.files.list({ purpose: 'batch_output' })).data.map((f) => f.id);
    expect(outputs).toEqual(expect.arrayContaining([batch.output_file_id, batch.error_file_id]));
    expect((await client.files.list({ purpose: 'batch' })).data.map((f) => f.id)).toContain(input);
    expect((await client.batches.list()).data.map((b) => b.id)).toContain(batch.id);
  });

  it('answers /v1/responses lines as /v1/responses does', async () => {
    const body = { model: TINY_MODEL, instructions: 'Answer briefly.', input: 'Hello.', temperature: 0, max_output_tokens: 6 };
    const input = await batchFile([{ custom_id: 'r1', method: 'POST', url: '/v1/responses', body }, { custom_id: 'r2', method: 'POST', url: '/v1/responses', body: { ...body, background: true } }]);
    const batch = await ended((await client.batches.create({ input_file_id: input, endpoint: '/v1/responses', completion_window: '24h' })).id);
    expect(batch.request_counts).toEqual({ total: 2, completed: 1, failed: 1 });
    const [line] = await fileLines(batch.output_file_id);
    const alone = await client.responses.create(body);
    expect(line!.response.body).toMatchObject({ object: 'response', status: alone.status, usage: { output_tokens: alone.usage!.output_tokens } });
    expect(line!.response.body.output[0].content[0].text).toBe(alone.output_text);
    const [failed] = await fileLines(batch.error_file_id);
    expect(failed).toMatchObject({ custom_id: 'r2', response: { status_code: 400, body: { error: { param: 'background' } } } });
  });

  it('fails a file that is not a batch file, naming each line at fault', async () => {
    const input = await batchFile([chatLine('a', 'Hi'), 'not json', chatLine('a', 'Hi again'), { ...chatLine('b', 'Hi'), url: '/v1/responses' }]);
    const batch = await ended((await client.batches.create({ input_file_id: input, endpoint: '/v1/chat/completions', completion_window: '24h' })).id);
    expect(batch.status).toBe('failed');
    expect(batch.errors!.data!.map((e) => [e.code, e.line])).toEqual([['invalid_json_line', 2], ['duplicate_custom_id', 3], ['mismatched_endpoint', 4]]);
    expect(batch.output_file_id).toBeNull();
  });

  it('refuses what cannot run with OpenAI’s errors: a fine-tune file, another endpoint, a file not the caller’s', async () => {
    const fineTune = (await client.files.create({ file: await toFile(Buffer.from(jsonl([chatLine('a', 'Hi')])), 'x.jsonl'), purpose: 'fine-tune' })).id;
    await expect(client.batches.create({ input_file_id: fineTune, endpoint: '/v1/chat/completions', completion_window: '24h' })).rejects.toMatchObject({ status: 400, param: 'input_file_id' });
    const input = await batchFile([chatLine('a', 'Hi')]);
    await expect(client.batches.create({ input_file_id: input, endpoint: '/v1/embeddings', completion_window: '24h' })).rejects.toMatchObject({ status: 400, param: 'endpoint' });
    await expect(client.batches.create({ input_file_id: 'ds_missing', endpoint: '/v1/chat/completions', completion_window: '24h' })).rejects.toMatchObject({ status: 404 });
    await expect(client.batches.retrieve('batch_missing')).rejects.toMatchObject({ status: 404 });
  });
});

describe('a batch cancelled', { timeout: 300_000 }, () => {
  it('is cancelling until a worker writes the lines answered so far, then cancelled; a cancelled batch cannot be cancelled again', async () => {
    // Held by no worker (as when every worker is busy): cancel, then a worker takes it and ends it.
    const input = await batchFile([chatLine('a', 'Hi'), chatLine('b', 'Hello')]);
    const row = await platform.batches.insert({ batch_id: newId('batch'), user_id: 'local', endpoint: '/v1/chat/completions', input_file_id: input, completion_window: '24h', metadata: null, expires_at: new Date(Date.now() + 3600_000) });
    const cancelling = await client.batches.cancel(row.batch_id);
    expect(cancelling).toMatchObject({ status: 'cancelling', cancelling_at: expect.any(Number) });
    expect((await client.batches.cancel(row.batch_id)).status).toBe('cancelling');
    await platform.queue.add(batchQueue, { batchId: row.batch_id });
    const batch = await ended(row.batch_id);
    expect(batch).toMatchObject({ status: 'cancelled', cancelled_at: expect.any(Number), request_counts: { total: 2, completed: 0, failed: 0 }, output_file_id: null });
    await expect(client.batches.cancel(row.batch_id)).rejects.toMatchObject({ status: 409 });
  });
});

describe('a batch whose worker died', { timeout: 300_000 }, () => {
  it('goes on from its first line not answered: every line answered once, the dead worker’s answers kept', async () => {
    const lines = Array.from({ length: 40 }, (_, i) => chatLine(`line-${i}`, `Count to ${i}.`, { max_tokens: 3 }));
    const input = await batchFile(lines);
    // A worker took it, answered its first 10 lines and died: its row names a worker that beats no more.
    const row = await platform.batches.insert({ batch_id: newId('batch'), user_id: 'local', endpoint: '/v1/chat/completions', input_file_id: input, completion_window: '24h', metadata: null, expires_at: new Date(Date.now() + 3600_000) });
    await platform.db.query("UPDATE batches SET worker_id = 'wrk_dead', status = 'in_progress', total = 40, in_progress_at = now() WHERE batch_id = $1", [row.batch_id]);
    const first = lines.slice(0, 10).map((l, i) => ({ line: i + 1, custom_id: l.custom_id, ok: true, result: { id: `batch_req_dead${i}`, custom_id: l.custom_id, response: { status_code: 200, body: { from: 'the dead worker' } }, error: null } }));
    await platform.batches.addResults(row.batch_id, first);
    await platform.batches.addResults(row.batch_id, first.slice(0, 3).map((r) => ({ ...r, result: { ...r.result, id: 'batch_req_again' } }))); // written twice: kept once

    await recoverOrphans(platform);
    const batch = await ended(row.batch_id);
    expect(batch).toMatchObject({ status: 'completed', request_counts: { total: 40, completed: 40, failed: 0 } });
    const output = await fileLines(batch.output_file_id);
    expect(output.map((l) => l.custom_id)).toEqual(lines.map((l) => l.custom_id));
    expect(output.slice(0, 10).map((l) => l.id)).toEqual(first.map((r) => r.result.id));
    expect(output.slice(10).every((l) => l.response.body.object === 'chat.completion')).toBe(true);
  });
});

describe('a batch (Python SDK)', () => {
  it('is created, polled and read back through client.batches and client.files.content', async () => {
    const script = [
      'import json, sys, time, io',
      'from openai import OpenAI',
      'client = OpenAI()',
      'lines = [{"custom_id": f"py-{i}", "method": "POST", "url": "/v1/chat/completions", "body": {"model": sys.argv[1], "messages": [{"role": "user", "content": f"Hi {i}"}], "temperature": 0, "max_tokens": 4}} for i in range(3)]',
      'f = client.files.create(file=("in.jsonl", io.BytesIO("\\n".join(json.dumps(l) for l in lines).encode())), purpose="batch")',
      'b = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")',
      'while b.status not in ("completed", "failed", "cancelled", "expired"):',
      '    time.sleep(0.25)',
      '    b = client.batches.retrieve(b.id)',
      'out = [json.loads(l) for l in client.files.content(b.output_file_id).text.splitlines()]',
      // cancel goes as a POST with an empty JSON body
      'c = client.batches.cancel(client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h").id)',
      'print(json.dumps({"status": b.status, "counts": b.request_counts.model_dump(), "ids": [o["custom_id"] for o in out], "listed": b.id in [x.id for x in client.batches.list()], "cancelled": c.status}))',
    ].join('\n');
    const { stdout } = await promisify(execFile)(process.env.CORE_PYTHON ?? DEFAULT_CORE_PYTHON, ['-c', script, TINY_MODEL], {
      env: { ...process.env, OPENAI_BASE_URL: client.baseURL, OPENAI_API_KEY: 'unused' }, timeout: 240_000,
    });
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toEqual({ status: 'completed', counts: { total: 3, completed: 3, failed: 0 }, ids: ['py-0', 'py-1', 'py-2'], listed: true, cancelled: expect.stringMatching(/^(cancelling|cancelled)$/) });
  }, 300_000);
});
