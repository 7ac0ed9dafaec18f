// Processing with an LLM augmentation method, across processes as it runs: POST /datasets/process answers at once
// with the dataset `processing`, a worker (queue `augment`) calls an OpenAI-compatible service and makes the dataset
// ready or failed. The service here is a local server that misbehaves on purpose (429 first, a request held open, a
// death mid-way); the real thing (this project's own /v1 on a tiny model) is test/augment-llm.test.ts.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Conflict, type ProcessedDatasetRow } from '@ftp/platform';
import { augmentQueue } from '@ftp/jobs/queues';
import { readyDataset } from '@ftp/jobs/training';
import { csv, readSplit, startService, type TestService } from '../../../test/support/preprocessing.ts';
import { startWorker, type WorkerHandle } from '../src/index.ts';

const KEY = 'sk-augment-SECRET-4711';
type Reply = (body: Record<string, any>, res: ServerResponse, n: number) => void | Promise<void>;

let server: Server;
let reply: Reply;
let requests: Array<{ body: Record<string, any>; headers: IncomingMessage['headers'] }> = [];
let svc: TestService;
let worker: WorkerHandle | undefined;
let datasetId: string;

function answer(res: ServerResponse, content: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(
    JSON.stringify({ id: 'c', object: 'chat.completion', created: 0, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: JSON.stringify(content) }, finish_reason: 'stop' }] }),
  );
}

/** A well-behaved service: French is the text in brackets, English back is the bracket's content plus "indeed",
 *  a paraphrase adds "in other words", a synthesised row is numbered. */
const sensible: Reply = (body, res, n) => {
  const name = body.response_format.json_schema.name as string;
  const system = body.messages[0].content as string;
  const text = body.messages.at(-1).content as string;
  if (name === 'translation') answer(res, { translation: system.includes('French') ? `[${text}]` : `${text.slice(1, -1)} indeed` });
  else if (name === 'paraphrase') answer(res, { paraphrase: `${text}, in other words` });
  else answer(res, { question: `What is new number ${n}?`, answer: `New answer ${n}.` });
};

const train = (row: ProcessedDatasetRow | undefined) => row?.splits.find((s) => s.split_name === 'train');
const dataset = async (id: string) => (await svc.platform.datasets.getForWorker(id))!;

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`still not there: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text) as Record<string, any>;
    requests.push({ body, headers: req.headers });
    await reply(body, res, requests.length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  svc = await startService({
    LLM_API_BASE: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    LLM_MODEL: 'helper-model',
    LLM_MAX_RETRIES: '1',
    WORKER_TIMEOUT_S: '60',
  });
  const rows = [['question', 'answer'], ...Array.from({ length: 10 }, (_, i) => [`Which small river flows past the old mill number ${i}?`, `The quiet river ${i}.`])];
  datasetId = (await svc.upload('rivers.csv', csv(rows))).json().dataset_id;
  worker = await startWorker(svc.platform, { queues: ['augment'] });
});

afterAll(async () => {
  await worker?.stop();
  await svc?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

const request = (augmentation: Record<string, unknown>) => ({
  dataset_name: 'rivers',
  dataset_id: datasetId,
  config: {
    field_mappings: { system_field: { type: 'template', value: 'Answer about rivers.' }, user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } },
    split_config: { type: 'manual_split', test_size: 2 },
    augmentation_config: { llm_api_key: KEY, ...augmentation },
  },
});

describe('a dataset augmented by a language model on a worker', () => {
  it('answers processing at once, retries a 429, and ends ready with every method’s rows marked and counted', async () => {
    requests = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    reply = async (body, res, n) => {
      if (n === 1) return void res.writeHead(429, { 'content-type': 'application/json', 'retry-after-ms': '10' }).end(JSON.stringify({ error: { message: 'slow down' } }));
      if (n === 2) await held; // the dataset stays processing until the test has looked
      sensible(body, res, n);
    };
    const res = await svc.process(request({ augmentation_factor: 2.5, use_eda: true, use_back_translation: true, use_paraphrasing: true, use_synthesis: true, synthesis_ratio: 0.5, custom_prompt: 'Ask about rivers.' }));
    expect(res.statusCode, res.body).toBe(200);
    const answered = res.json();
    expect(answered).toMatchObject({ status: 'processing', num_examples: 0, splits: [], full_splits: [], progress: { done: 0, total: 10 } });
    const id = answered.processed_dataset_id as string;

    // Not trainable until ready; the listing says processing too.
    await until(() => Promise.resolve(requests.length), (n) => n >= 2);
    await expect(readyDataset(svc.platform, 'local', id)).rejects.toThrow(Conflict);
    expect((await svc.call({ method: 'GET', url: `/datasets/${id}` })).json()).toMatchObject({ status: 'processing', splits: [] });
    release();

    const done = await until(() => dataset(id), (row) => row.status !== 'processing');
    expect(done.status, done.error ?? '').toBe('ready');
    expect(await readyDataset(svc.platform, 'local', id)).toMatchObject({ status: 'ready' });
    // 8 train rows, f 2.5: 12 new rows, 4 per row method; synthesis 0.5 × 8 = 4 of its own.
    const counts = done.augmentation!;
    for (const method of ['back_translation', 'paraphrasing', 'synthesis'] as const) expect(counts[method]).toEqual({ added: 4, dropped: 0 });
    expect(counts.eda!.added + counts.eda!.dropped).toBe(4);
    expect(done.progress).toEqual({ done: 10, total: 10, by_method: { eda: counts.eda!.added, back_translation: 4, paraphrasing: 4, synthesis: 4 } });

    const records = await readSplit(svc.platform, svc.platform.blobs.uri(train(done)!.blob_key)) as Array<{ messages: Array<{ role: string; content: string }>; metadata?: { augmented: string; source_index: number } }>;
    expect(records).toHaveLength(8 + 12 - counts.eda!.dropped + 4);
    const originals = records.filter((r) => !r.metadata);
    expect(originals).toHaveLength(8);
    const bySource = new Map(originals.map((r) => [Number(/number (\d+)/.exec(r.messages[1]!.content)![1]), r]));
    for (const record of records.filter((r) => r.metadata && r.metadata.augmented !== 'synthesis')) {
      const source = bySource.get(record.metadata!.source_index)!;
      expect(source, JSON.stringify(record)).toBeDefined();
      expect(record.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
      expect(record.messages[0]!.content).toBe('Answer about rivers.');
      if (record.metadata!.augmented === 'eda') continue;
      // The answer is kept; the question went through the service.
      expect(record.messages[2]!.content).toBe(source.messages[2]!.content);
      const expected = record.metadata!.augmented === 'paraphrasing' ? `${source.messages[1]!.content}, in other words` : `${source.messages[1]!.content} indeed`;
      expect(record.messages[1]!.content).toBe(expected);
    }
    const synthesized = records.filter((r) => r.metadata?.augmented === 'synthesis');
    expect(synthesized).toHaveLength(4);
    expect(records.slice(-4)).toEqual(synthesized); // after the last train row
    for (const r of synthesized) expect(r.messages[1]!.content).toMatch(/^What is new number \d+\?$/);
    const test = await readSplit(svc.platform, svc.platform.blobs.uri(done.splits.find((s) => s.split_name === 'test')!.blob_key));
    expect(test.map((r) => 'metadata' in r)).toEqual([false, false]);

    // JSON asked for by schema, the key sent as the bearer and nowhere else; the sealed copy is dropped.
    expect(requests.some((r) => r.body.response_format?.type !== 'json_schema')).toBe(false);
    expect(new Set(requests.map((r) => r.headers.authorization))).toEqual(new Set([`Bearer ${KEY}`]));
    expect(requests.every((r) => r.body.model === 'helper-model')).toBe(true);
    expect(JSON.stringify(done)).not.toContain(KEY);
    expect(svc.platform.logText()).not.toContain(KEY);
    expect(await svc.platform.secrets.open(id)).toBeUndefined();
  });

  it('fails the dataset naming the service when it dies mid-way, and keeps nothing of it', async () => {
    requests = [];
    reply = (body, res, n) => void (n <= 3 ? sensible(body, res, n) : res.socket?.destroy());
    const res = await svc.process(request({ augmentation_factor: 2, use_paraphrasing: true }));
    expect(res.statusCode, res.body).toBe(200);
    const id = res.json().processed_dataset_id as string;
    const failed = await until(() => dataset(id), (row) => row.status !== 'processing');
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/^the language-model service at http:\/\/127\.0\.0\.1:\d+\/v1 is unreachable .*check LLM_API_BASE$/);
    expect(failed.splits).toEqual([]);
    expect(await svc.platform.blobs.list(failed.blob_prefix)).toEqual([]);
    await expect(readyDataset(svc.platform, 'local', id)).rejects.toThrow(/failed to process \(the language-model service/);
    expect((await svc.call({ method: 'GET', url: `/datasets/${id}` })).json()).toMatchObject({ status: 'failed', error: failed.error });
    expect(await svc.platform.secrets.open(id)).toBeUndefined();
  });

  it('hands the dataset back when its worker stops, and the next worker finishes it', async () => {
    requests = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    reply = async (body, res, n) => {
      if (n === 1) {
        await held;
        return void res.socket?.destroy();
      }
      sensible(body, res, n);
    };
    const res = await svc.process(request({ augmentation_factor: 1.5, use_paraphrasing: true }));
    const id = res.json().processed_dataset_id as string;
    await until(() => Promise.resolve(requests.length), (n) => n >= 1);
    const stopping = worker!.stop();
    release();
    await stopping;
    expect(await dataset(id)).toMatchObject({ status: 'processing', worker_id: null, progress: null });
    expect(await svc.platform.secrets.open(id)).toMatchObject({ llmApiKey: KEY });

    worker = await startWorker(svc.platform, { queues: ['augment'] });
    const done = await until(() => dataset(id), (row) => row.status !== 'processing');
    expect(done.status, done.error ?? '').toBe('ready');
    expect(done.augmentation).toEqual({ paraphrasing: { added: 4, dropped: 0 } });
  });

  it('fails when its upload is deleted with cancel_jobs=true (a 409 without), and its worker stops and keeps nothing', async () => {
    requests = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    reply = async (body, res, n) => {
      if (n === 1) await held;
      sensible(body, res, n);
    };
    const rows = [['question', 'answer'], ...Array.from({ length: 6 }, (_, i) => [`Which brook runs under the bridge number ${i}?`, `The cold brook ${i}.`])];
    const uploadId = (await svc.upload('brooks.csv', csv(rows))).json().dataset_id as string;
    const res = await svc.process({ ...request({ augmentation_factor: 2, use_paraphrasing: true }), dataset_id: uploadId });
    const id = res.json().processed_dataset_id as string;
    await until(() => Promise.resolve(requests.length), (n) => n >= 1);

    const refused = await svc.call({ method: 'DELETE', url: `/datasets/${uploadId}` });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().detail).toContain(`processed dataset ${id}, still being made from it`);
    const deleted = await svc.call({ method: 'DELETE', url: `/datasets/${uploadId}?cancel_jobs=true` });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json().kept_processed_datasets).toEqual([id]);
    expect(await dataset(id)).toMatchObject({ status: 'failed', error: `cancelled by user: its upload ${uploadId} was deleted while it was processed` });
    expect(await svc.platform.secrets.open(id)).toBeUndefined();

    release();
    await until(() => svc.platform.queue.pending(augmentQueue), (pending) => pending.length === 0);
    expect(await svc.platform.blobs.list((await dataset(id)).blob_prefix)).toEqual([]);
    expect(await dataset(id)).toMatchObject({ status: 'failed', worker_id: null });
  });
});
