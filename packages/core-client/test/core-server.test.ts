// The warm core against a real `ftcore serve`: answers matched by id while pipelined, errors per request,
// time limits that cancel in the core, a core that dies (pending requests fail, the next one restarts it), close.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreServer, CoreServerError } from '../src/core-server.ts';
import { tinyModelsDir, TINY_MODEL } from '../../../test/support/tiny-model.ts';

const CONVERSATIONS = [
  [{ role: 'user' as const, content: 'What is the capital of France?' }],
  [{ role: 'system' as const, content: 'Be brief.' }, { role: 'user' as const, content: 'Say hi.' }],
];

let model: string;
let server: CoreServer;

beforeAll(async () => {
  model = path.join(await tinyModelsDir(), TINY_MODEL);
  server = new CoreServer({ device: 'cpu', env: { OMP_NUM_THREADS: '1' }, requestTimeoutMs: 60_000 });
}, 180_000);
afterAll(() => server?.close());

const rejection = (promise: Promise<unknown>) => promise.then(() => undefined, (err: unknown) => err as CoreServerError);

describe('CoreServer', () => {
  it('generates, keeping the model loaded for the next request', async () => {
    const first = await server.generate({ model, conversations: CONVERSATIONS, max_new_tokens: 8 });
    expect(first.texts).toHaveLength(2);
    expect(first.token_ids.every((ids) => ids.length <= 8)).toBe(true);
    expect(first.load_seconds).toBeGreaterThan(0);
    const second = await server.generate({ model, conversations: CONVERSATIONS, max_new_tokens: 8 });
    expect(second.load_seconds).toBe(0);
    expect(second.texts).toEqual(first.texts);
  });

  it('tells a request that waits for a cold model what the core does, with the time so far (#39)', async () => {
    // The load held 3 s (the core's test hook), the interval 1 s: three or more growing sentences reach the request.
    const cold = new CoreServer({ device: 'cpu', env: { OMP_NUM_THREADS: '1', FTCORE_TEST_HOLD: 'load=3', FTCORE_PROGRESS_INTERVAL: '1' } });
    try {
      const heard: string[] = [];
      await cold.generate({ model, conversations: CONVERSATIONS, max_new_tokens: 4 }, { onProgress: (m) => heard.push(m) });
      const beats = heard.filter((m) => /^loading tiny: \d+ s so far$/.test(m));
      expect(beats.length, heard.join('\n')).toBeGreaterThanOrEqual(3);
      const seconds = beats.map((m) => Number(/(\d+) s so far/.exec(m)![1]));
      expect(seconds.at(-1)!).toBeGreaterThan(seconds[0]!);
      expect(heard.some((m) => m.startsWith('loaded tiny on cpu'))).toBe(true);
    } finally {
      await cold.close();
    }
  });

  it('pipelines requests and matches each answer to its request', async () => {
    const pid = server.pid;
    const [qa, generated, bleu] = await Promise.all([
      server.evaluate({ predictions: ['Paris', 'London'], references: ['paris', 'Paris'], task_type: 'qa' }),
      server.generate({ model, conversations: CONVERSATIONS.slice(0, 1), max_new_tokens: 3 }),
      server.evaluate({ predictions: ['the cat sat on the mat'], references: ['the cat sat on the mat'], metrics: ['bleu'] }),
    ]);
    expect(qa.scores).toEqual({ exact_match: 0.5, f1: 0.5 });
    expect(generated.texts).toHaveLength(1);
    expect(bleu.scores.bleu).toBeCloseTo(100);
    expect(server.pid).toBe(pid);
  });

  it('rejects a bad request with the core’s explanation and keeps serving', async () => {
    const pid = server.pid;
    const err = await rejection(server.generate({ model: '/nowhere/model', conversations: CONVERSATIONS }));
    expect(err).toBeInstanceOf(CoreServerError);
    expect(err).toMatchObject({ code: 'validation', message: expect.stringContaining('no config.json') });
    const both = await rejection(server.evaluate({ predictions: ['a'], references: ['a'], metrics: ['bleu'], task_type: 'qa' }));
    expect(both).toMatchObject({ code: 'validation' });
    expect((await server.evaluate({ predictions: ['a'], references: ['a'], task_type: 'qa' })).scores.exact_match).toBe(1);
    expect(server.pid).toBe(pid);
  });

  it('fails a request past its time limit, cancels it in the core and answers the next one', async () => {
    const pid = server.pid;
    const started = Date.now();
    const err = await rejection(server.generate({ model, conversations: CONVERSATIONS, max_new_tokens: 450 }, { timeoutMs: 50 }));
    expect(err).toMatchObject({ code: 'timeout', message: 'the ML core did not answer within 50 ms' });
    expect(Date.now() - started).toBeLessThan(2_000);
    const next = await server.generate({ model, conversations: CONVERSATIONS, max_new_tokens: 2 });
    expect(next.token_ids.every((ids) => ids.length <= 2)).toBe(true);
    expect(server.pid).toBe(pid);
  });

  it('fails pending requests when the core dies, and the next request starts a new one', async () => {
    const pid = server.pid!;
    const pending = rejection(server.generate({ model, conversations: CONVERSATIONS, max_new_tokens: 450 }));
    await new Promise((r) => setTimeout(r, 100));
    process.kill(pid, 'SIGKILL');
    const err = await pending;
    expect(err).toMatchObject({ code: 'exited', message: expect.stringContaining('was killed by SIGKILL') });
    const after = await server.generate({ model, conversations: CONVERSATIONS, max_new_tokens: 2 });
    expect(after.load_seconds).toBeGreaterThan(0); // a fresh process loads the model again
    expect(server.pid).not.toBe(pid);
  });

  it('a core that cannot start fails the request with the reason, never hangs', async () => {
    const broken = new CoreServer({ python: '/nonexistent/python' });
    const err = await rejection(broken.evaluate({ predictions: ['a'], references: ['a'] }));
    expect(err).toMatchObject({ code: 'exited', message: expect.stringContaining('could not be started') });
    await broken.close();
  });

  it('close fails what is pending and stops the process', async () => {
    const own = new CoreServer({ device: 'cpu', env: { OMP_NUM_THREADS: '1' } });
    const pending = rejection(own.generate({ model, conversations: CONVERSATIONS, max_new_tokens: 450 }));
    await new Promise((r) => setTimeout(r, 100));
    const pid = own.pid!;
    await own.close();
    expect(await pending).toMatchObject({ code: 'closed' });
    expect(() => process.kill(pid, 0)).toThrow();
    expect(await rejection(own.evaluate({ predictions: ['a'], references: ['a'] }))).toMatchObject({ code: 'closed' });
  });
});
