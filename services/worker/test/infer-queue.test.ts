// The infer queue end to end on the embedded pieces: a worker serving it, the tiny base model on both engines. With
// stream set, the text comes as deltas (the queue's reports) that add up to each answer and all arrive before it;
// details say how each text ended; seed and stop strings reach the core; JSON formats need the fast engine.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnprocessableEntity } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { inferQueue, StreamDelta, type GenerationSettings, type InferResult } from '@ftp/jobs/queues';
import { tinyModelsDir, TINY_MODEL } from '../../../test/support/tiny-model.ts';
import { startWorker, type WorkerHandle } from '../src/index.ts';

const CONVERSATIONS = [
  [{ role: 'user' as const, content: 'What is the capital of France?' }],
  [{ role: 'system' as const, content: 'Be brief.' }, { role: 'user' as const, content: 'Say hi.' }],
];
const SHORT_ANSWER = { type: 'object', properties: { answer: { type: 'string', maxLength: 8 } }, required: ['answer'], additionalProperties: false };

let platform: TestPlatform;
let worker: WorkerHandle;

beforeAll(async () => {
  // HF_ENDPOINT: a closed port, so nothing is fetched; one llama.cpp thread on a busy 2-core machine.
  platform = await openTestPlatform({ MODELS_DIR: await tinyModelsDir(), FAST_ENGINE_QUANTIZATION: 'f16', FAST_ENGINE_THREADS: '1', HF_ENDPOINT: 'http://127.0.0.1:9' });
  worker = await startWorker(platform, { queues: ['infer'] });
}, 180_000);
afterAll(async () => {
  await worker?.stop();
  await platform?.close();
});

function infer(fast: boolean, generation: GenerationSettings, onReport?: (data: unknown) => void): Promise<InferResult> {
  const model = { model_source: 'base' as const, base_model_id: TINY_MODEL, use_fast_engine: fast };
  return platform.queue.request(inferQueue, { userId: 'u-infer', model, conversations: CONVERSATIONS, generation }, onReport ? { onReport } : {});
}

/** The request's answer, the deltas it streamed before the answer came, and each conversation's text in them. */
async function streamed(fast: boolean, generation: GenerationSettings): Promise<{ answer: InferResult; texts: string[]; deltas: StreamDelta[] }> {
  const deltas: StreamDelta[] = [];
  const answer = await infer(fast, { ...generation, stream: true }, (data) => deltas.push(StreamDelta.parse(data)));
  const texts = CONVERSATIONS.map((_, i) => deltas.filter((d) => d.index === i).map((d) => d.text).join(''));
  return { answer, texts, deltas };
}

describe.each([
  ['transformers', false],
  ['fast', true],
])('infer on the %s engine', (_engine, fast) => {
  it('streams deltas that add up to each text, and details say how each ended', async () => {
    const { answer, texts, deltas } = await streamed(fast, { max_new_tokens: 12, temperature: 0 });
    expect(texts).toEqual(answer.results);
    // transformers has each text only when the batch is done: one delta per conversation.
    if (!fast) expect(deltas.map((d) => d.index)).toEqual(answer.results.flatMap((text, i) => (text === '' ? [] : [i])));
    const quiet: unknown[] = [];
    expect(await infer(fast, { max_new_tokens: 12, temperature: 0 }, (data) => quiet.push(data))).toEqual(answer);
    expect(quiet).toEqual([]); // no stream asked for, none sent
    expect(answer.details).toHaveLength(CONVERSATIONS.length);
    for (const detail of answer.details) {
      expect(detail.prompt_tokens).toBeGreaterThan(5);
      expect(detail.finish_reason).toBe(detail.completion_tokens === 12 ? 'length' : 'stop');
    }
  });

  it('samples the same text for the same seed, and ends before a stop string', async () => {
    const sampled = { max_new_tokens: 8, temperature: 1.0 };
    const first = await infer(fast, { ...sampled, seed: 1 });
    expect((await infer(fast, { ...sampled, seed: 1 })).results).toEqual(first.results);
    expect((await infer(fast, { ...sampled, seed: 2 })).results).not.toEqual(first.results);

    const plain = (await infer(fast, { max_new_tokens: 12, temperature: 0 })).results[0]!;
    const stop = plain.slice(Math.floor(plain.length / 2), Math.floor(plain.length / 2) + 3);
    const stopped = await infer(fast, { max_new_tokens: 12, temperature: 0, stop: [stop] });
    expect(stopped.results[0]).toBe(plain.slice(0, plain.indexOf(stop)));
    expect(stopped.details[0]!.finish_reason).toBe('stop');
  });

  it(fast ? 'answers JSON that matches the schema, and refuses a schema it cannot honour' : 'refuses a JSON response_format', async () => {
    const json = infer(fast, { max_new_tokens: 40, temperature: 0, response_format: { type: 'json_schema', schema: SHORT_ANSWER } });
    if (!fast) {
      const refused = await json.catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(UnprocessableEntity);
      expect((refused as UnprocessableEntity).issues[0]).toMatchObject({ loc: ['body', 'response_format'], type: 'not_available' });
      return;
    }
    for (const text of (await json).results) expect(Object.keys(JSON.parse(text) as object)).toEqual(['answer']);
    const refused = await infer(fast, { max_new_tokens: 8, temperature: 0, response_format: { type: 'json_schema', schema: { type: 'string', pattern: 'a+' } } }).catch((err: unknown) => err);
    expect((refused as UnprocessableEntity).issues[0]).toMatchObject({ loc: ['body', 'response_format'], msg: expect.stringContaining('schema.pattern') });
  });
});
