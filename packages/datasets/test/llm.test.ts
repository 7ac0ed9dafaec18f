// The LLM augmentation client and methods against a local OpenAI-compatible server that misbehaves on purpose:
// 429 then 200, 5xx to the end, a server that dies mid-way, answers that are not JSON; and how many requests run at once.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LlmClient, LlmUnavailable } from '../src/augmentation/llm.ts';
import { backTranslate, paraphrase, synthesizeRow } from '../src/augmentation/llm-methods.ts';

type Reply = (request: { body: Record<string, any>; n: number }, res: ServerResponse) => void | Promise<void>;

interface FakeLlm {
  url: string;
  requests: Array<Record<string, any>>;
  headers: IncomingMessage['headers'][];
  maxInFlight: number;
  server: Server;
}

let open: FakeLlm | undefined;
afterEach(async () => {
  open?.server.closeAllConnections();
  await new Promise((resolve) => open?.server.close(resolve) ?? resolve(undefined));
  open = undefined;
});

function completion(content: string) {
  return { id: 'c', object: 'chat.completion', created: 0, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

async function fakeLlm(reply: Reply): Promise<FakeLlm> {
  let inFlight = 0;
  const fake: FakeLlm = { url: '', requests: [], headers: [], maxInFlight: 0, server: undefined as unknown as Server };
  fake.server = createServer(async (req, res) => {
    inFlight += 1;
    fake.maxInFlight = Math.max(fake.maxInFlight, inFlight);
    let text = '';
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text) as Record<string, any>;
    fake.requests.push(body);
    fake.headers.push(req.headers);
    try {
      await reply({ body, n: fake.requests.length }, res);
    } finally {
      inFlight -= 1;
    }
  });
  await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}/v1`;
  open = fake;
  return fake;
}

const client = (fake: FakeLlm, overrides: Partial<ConstructorParameters<typeof LlmClient>[0]> = {}) =>
  new LlmClient({ apiBase: fake.url, model: 'tiny', apiKey: 'sk-test-SECRET', maxRetries: 3, ...overrides });

describe('LlmClient', () => {
  it('retries a 429 (honouring Retry-After) and returns the answer; asks for JSON by schema, with the key', async () => {
    const fake = await fakeLlm(({ n }, res) =>
      n === 1 ? send(res, 429, { error: { message: 'slow down' } }, { 'retry-after-ms': '10' }) : send(res, 200, completion('{"paraphrase":"Say it again."}')),
    );
    expect(await paraphrase(client(fake), 'Repeat that.')).toBe('Say it again.');
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]).toMatchObject({ model: 'tiny', response_format: { type: 'json_schema', json_schema: { name: 'paraphrase', strict: true } } });
    expect(fake.requests[1]!.response_format.json_schema.schema).toMatchObject({ type: 'object', required: ['paraphrase'] });
    expect(fake.headers[1]!.authorization).toBe('Bearer sk-test-SECRET');
  });

  it('gives up on a service that keeps answering 5xx, naming the status', async () => {
    const fake = await fakeLlm((_r, res) => send(res, 503, { error: { message: 'overloaded' } }, { 'retry-after-ms': '1' }));
    const error = await paraphrase(client(fake, { maxRetries: 2 }), 'x').catch((err: Error) => err);
    expect(error).toBeInstanceOf(LlmUnavailable);
    expect((error as Error).message).toMatch(/answered HTTP 503/);
    expect((error as Error).message).not.toContain('SECRET');
    expect(fake.requests).toHaveLength(3);
  });

  it('fails every request after the service dies mid-way, without hanging', async () => {
    const fake = await fakeLlm(({ n }, res) => {
      if (n <= 2) return send(res, 200, completion('{"translation":"bonjour"}'));
      fake.server.closeAllConnections();
      fake.server.close();
    });
    const llm = client(fake, { maxRetries: 1 });
    expect(await llm.json('translation', z.strictObject({ translation: z.string() }), [{ role: 'user', content: 'hi' }])).toEqual({ translation: 'bonjour' });
    const error = await backTranslate(llm, 'hello there').catch((err: Error) => err);
    expect(error).toBeInstanceOf(LlmUnavailable);
    expect((error as Error).message).toMatch(/unreachable|answered/);
  });

  it('a bad generation (not JSON, wrong keys, unchanged text) is undefined, not an error', async () => {
    const answers = ['not json at all', '{"wrong":"key"}', '{"paraphrase":"same text"}', '{"paraphrase":"   "}'];
    const fake = await fakeLlm(({ n }, res) => send(res, 200, completion(answers[n - 1]!)));
    const llm = client(fake);
    for (let i = 0; i < answers.length; i += 1) expect(await paraphrase(llm, 'same text')).toBeUndefined();
  });

  it('runs at most `concurrency` requests at once, and stops at the deadline', async () => {
    const fake = await fakeLlm(async (_r, res) => {
      await new Promise((resolve) => setTimeout(resolve, 30));
      send(res, 200, completion('{"paraphrase":"other words"}'));
    });
    const llm = client(fake, { concurrency: 2 });
    const results = await Promise.all(Array.from({ length: 6 }, () => paraphrase(llm, 'words')));
    expect(results).toEqual(Array(6).fill('other words'));
    expect(fake.maxInFlight).toBe(2);
    const late = client(fake, { deadlineMs: 0 });
    await expect(paraphrase(late, 'words')).rejects.toThrow(/time limit/);
  });
});

describe('LLM methods', () => {
  it('back-translation goes to the pivot language and back; synthesis writes a new row of the asked columns', async () => {
    const fake = await fakeLlm(({ body }, res) => {
      const system: string = body.messages[0].content;
      if (system.includes('into French')) return send(res, 200, completion('{"translation":"Quelle heure est-il ?"}'));
      if (system.includes('into English')) return send(res, 200, completion('{"translation":"What time is it now?"}'));
      return send(res, 200, completion('{"question":"How tall is Everest?","answer":"About 8849 metres."}'));
    });
    const llm = client(fake);
    expect(await backTranslate(llm, 'What is the time?')).toBe('What time is it now?');
    expect(fake.requests[0]!.messages[1].content).toBe('What is the time?');
    expect(fake.requests[1]!.messages[1].content).toBe('Quelle heure est-il ?');
    const row = await synthesizeRow(llm, { columns: ['question', 'answer'], examples: [{ question: 'Capital of Peru?', answer: 'Lima.' }], instruction: 'Geography only.' });
    expect(row).toEqual({ question: 'How tall is Everest?', answer: 'About 8849 metres.' });
    const asked = fake.requests[2]!;
    expect(asked.messages[0].content).toContain('Geography only.');
    expect(asked.response_format.json_schema.schema).toMatchObject({ required: ['question', 'answer'], additionalProperties: false });
  });
});
