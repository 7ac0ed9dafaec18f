// Chat completions with tools, up to the queue, on a real app and platform (no worker: what is checked is answered
// before any work is queued), and the reading of answers into OpenAI's tool_calls, streamed or not.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { toolModelsDir, TINY_MODEL } from '../../../test/support/tiny-model.ts';
import { forcedCall, readAnswer, ToolStream } from '@ftp/jobs/openai';
import { openAiTestApp, type OpenAiTestApp } from './support.ts';

let opened: OpenAiTestApp;
let app: FastifyInstance;

beforeAll(async () => {
  opened = await openAiTestApp(await toolModelsDir());
  app = opened.app;
}, 300_000);

afterAll(() => opened?.close());

const WEATHER = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
const chat = (payload: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { messages: [{ role: 'user', content: 'Weather in Paris?' }], ...payload } });

describe('a chat completion with tools', () => {
  it('on a model whose template has no tool support is a 400 that says so', async () => {
    const res = await chat({ model: TINY_MODEL, tools: [WEATHER] });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: 'tools', message: expect.stringMatching(/the chat template of "tiny" .* has no tool support/) });
  });

  it('refuses tool_choice without tools or naming another function, and a tool result answering no call', async () => {
    expect((await chat({ model: 'tiny-qwen2.5', tool_choice: 'auto' })).json().error).toMatchObject({ param: 'tool_choice', message: expect.stringMatching(/tool_choice needs tools/) });
    const named = await chat({ model: 'tiny-qwen2.5', tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'get_time' } } });
    expect(named.json().error.message).toMatch(/tool_choice names "get_time", which is not in tools \(get_weather\)/);
    const orphan = await chat({ model: 'tiny-qwen2.5', tools: [WEATHER], messages: [{ role: 'user', content: 'Hi' }, { role: 'tool', tool_call_id: 'call_x', content: 'sunny' }] });
    expect(orphan.statusCode).toBe(400);
    expect(orphan.json().error.message).toMatch(/messages\[1\] answers tool_call_id "call_x", but no earlier assistant message made a call with that id/);
  });
});

describe('tool_choice required or named', () => {
  const TIME = { type: 'function' as const, function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } } };
  const body = (tool_choice: unknown) => ({ model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], tools: [WEATHER, TIME], tool_choice }) as unknown as Parameters<typeof forcedCall>[0];
  const call = (name: string, key: string, parameters: unknown) => ({ type: 'object', properties: { name: { const: name }, [key]: parameters }, required: ['name', key], additionalProperties: false });

  it('is the call every answer is constrained to, in the family\'s format; auto and none force nothing', () => {
    const use = { names: ['get_weather', 'get_time'], format: 'hermes' as const };
    expect(forcedCall(body({ type: 'function', function: { name: 'get_time' } }), use)).toEqual({ schema: call('get_time', 'arguments', TIME.function.parameters), prefix: '<tool_call>\n', suffix: '\n</tool_call>' });
    expect(forcedCall(body('required'), { ...use, format: 'llama3' })).toEqual({
      schema: { oneOf: [call('get_weather', 'parameters', WEATHER.function.parameters), call('get_time', 'parameters', TIME.function.parameters)] }, prefix: '', suffix: '',
    });
    expect(forcedCall(body('auto'), use)).toBeUndefined();
    expect(forcedCall(body('none'), use)).toBeUndefined();
  });
});

describe('answers read as tool calls', () => {
  const use = { names: ['get_weather'], format: 'hermes' as const };
  const call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';

  it('are calls with new ids, one only when parallel_tool_calls is false, and text when tool_choice is none', () => {
    const both = readAnswer(`${call}\n${call.replace('Paris', 'Rome')}`, use, true);
    expect(both.content).toBeNull();
    expect(both.calls.map((c) => [c.type, c.function.name, c.function.arguments])).toEqual([['function', 'get_weather', '{"city":"Paris"}'], ['function', 'get_weather', '{"city":"Rome"}']]);
    expect(both.calls[0]!.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(new Set(both.calls.map((c) => c.id)).size).toBe(2);
    expect(readAnswer(`${call}\n${call}`, use, false).calls).toHaveLength(1);
    expect(readAnswer(call, { ...use, names: [] }, true)).toEqual({ content: call, calls: [] });
  });

  it('streamed: text streams at once, a call is held and sent as OpenAI streams calls (id and name, then arguments)', () => {
    const text = new ToolStream(use, true);
    expect(text.add('It')).toEqual({ content: 'It' });
    expect(text.add(' is sunny.')).toEqual({ content: ' is sunny.' });
    expect(text.finish()).toEqual({ deltas: [], called: false });

    const calling = new ToolStream(use, true);
    for (const piece of ['<tool', '_call>\n{"name": "get_weather", ', '"arguments": {"city": "Paris"}}\n</tool_call>']) expect(calling.add(piece)).toBeUndefined();
    const { deltas, called } = calling.finish();
    expect(called).toBe(true);
    expect(deltas).toEqual([
      { tool_calls: [{ index: 0, id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'get_weather', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] },
    ]);

    const json = new ToolStream(use, true); // held like a call, but it is an answer in JSON after all
    expect(json.add('{"answer": 1}')).toBeUndefined();
    expect(json.finish()).toEqual({ deltas: [{ content: '{"answer": 1}' }], called: false });
  });
});
