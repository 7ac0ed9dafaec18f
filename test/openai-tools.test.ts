// Function calling through the official npm client, unchanged, against this worker's shared embedded stack: a
// fine-tuning file of get_weather conversations with a bad line fails the job with the line's number; a named
// tool_choice on tiny-qwen2.5 (random weights, Qwen2.5's published template) is a call in the family's format whose
// arguments follow the tool's schema, streamed as OpenAI streams calls, and a tool's result then gets a text answer.
// That the default model (SmolLM2-135M-Instruct with Qwen2.5's template), fine-tuned on three dozen such
// conversations, calls the tool unforced for a city it never saw, on both engines, is the README's function-calling
// block (test/readme.test.ts runs it with the official Python client). The Responses API (stateless /v1/responses) is
// driven by the same client: text whole and streamed (the SDK's own stream accumulator checks every event), and a
// function call whose output goes back as an input item.
import OpenAI, { toFile } from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/http.ts';
import { sharedStack, TOOL_MODEL } from './support/shared-stack.ts';
import { TINY_MODEL } from './support/tiny-model.ts';

let alice: OpenAI;

beforeAll(async () => {
  const stack = await sharedStack();
  alice = new OpenAI({ apiKey: await stack.token('tools-alice'), baseURL: `${stack.urls.openai}/v1`, maxRetries: 0 });
}, 300_000);

const WEATHER = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } } } as const;
const WEATHERS = ['sunny', 'rainy', 'snowy', 'cloudy'];

interface Line {
  messages: Array<{ tool_call_id?: string; tool_calls?: Array<{ function: { name: string; arguments: string } }> }>;
}

/** A line in OpenAI's format: the user asks, the assistant calls get_weather, the tool answers, the assistant says it. */
function line(city: string, i: number, ask = `What is the weather in ${city}?`): string {
  const id = `call_${i}`;
  return JSON.stringify({
    tools: [WEATHER],
    messages: [
      { role: 'user', content: ask },
      { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify({ city }) } }] },
      { role: 'tool', tool_call_id: id, content: WEATHERS[i % WEATHERS.length] },
      { role: 'assistant', content: `It is ${WEATHERS[i % WEATHERS.length]} in ${city}.` },
    ],
  });
}

const finished = (id: string) => until(`job ${id}`, () => alice.fineTuning.jobs.retrieve(id), (j) => ['succeeded', 'failed', 'cancelled'].includes(j.status), 600_000);

/** The one call of an answer, its arguments read as JSON. */
function theCall(calls: Array<{ type: string; function?: { name: string; arguments: string } }> | undefined) {
  expect(calls).toHaveLength(1);
  const call = calls![0]!;
  expect(call.type).toBe('function');
  return { name: call.function!.name, args: JSON.parse(call.function!.arguments) as Record<string, unknown> };
}

describe('function calling with the official npm client', { timeout: 600_000 }, () => {
  it.each([
    ['arguments that are not JSON', (l: Line) => void (l.messages[1]!.tool_calls![0]!.function.arguments = '{city: Rome'), /line 2: messages\[1\]\.tool_calls\[0\]\.function\.arguments is not JSON/],
    ['a tool message with no matching call', (l: Line) => void (l.messages[2]!.tool_call_id = 'call_other'), /line 2: messages\[2\] answers tool_call_id "call_other", but no earlier assistant message made a call with that id/],
    ['a call to a function not in tools', (l: Line) => void (l.messages[1]!.tool_calls![0]!.function.name = 'get_time'), /line 2: messages\[1\]\.tool_calls\[0\] calls "get_time", which is not in tools/],
  ])('a line with %s fails the job with its number', async (_, change, message) => {
    const bad = JSON.parse(line('Rome', 1)) as Line;
    change(bad);
    const file = await alice.files.create({ file: await toFile(Buffer.from([line('Paris', 0), JSON.stringify(bad)].join('\n')), 'bad-tools.jsonl'), purpose: 'fine-tune' });
    const job = await finished((await alice.fineTuning.jobs.create({ model: TOOL_MODEL, training_file: file.id })).id);
    expect(job).toMatchObject({ status: 'failed', error: { code: 'invalid_training_file', param: 'training_file', message: expect.stringMatching(message) } });
  });

  it('a named tool_choice forces a call whose arguments follow the tool’s schema, streamed alike; the tool’s result gets an answer', async () => {
    // The untrained base: what it writes is the grammar's doing. A city of at most 12 characters, so that the random
    // model's string ends within max_tokens.
    const short = { ...WEATHER, function: { ...WEATHER.function, parameters: { ...WEATHER.function.parameters, properties: { city: { type: 'string', maxLength: 12 } } } } };
    const ask = [{ role: 'user' as const, content: 'What is the weather in Sydney?' }];
    const forced = { model: TOOL_MODEL, messages: ask, tools: [short], tool_choice: { type: 'function' as const, function: { name: 'get_weather' } }, temperature: 0, max_tokens: 128 };
    const answer = await alice.chat.completions.create(forced);
    expect(answer.choices[0]!.finish_reason).toBe('tool_calls');
    const call = theCall(answer.choices[0]!.message.tool_calls);
    expect(call.name).toBe('get_weather');
    expect(Object.keys(call.args)).toEqual(['city']);
    expect(String(call.args['city']).length).toBeLessThanOrEqual(12);

    // Streamed: the id and name first, the arguments in deltas; the same call (greedy).
    const streamed = { id: '', name: '', args: '' };
    let reason: string | null = null;
    for await (const chunk of await alice.chat.completions.create({ ...forced, stream: true })) {
      for (const part of chunk.choices[0]?.delta?.tool_calls ?? []) {
        expect(part.index).toBe(0);
        streamed.id += part.id ?? '';
        streamed.name += part.function?.name ?? '';
        streamed.args += part.function?.arguments ?? '';
      }
      reason = chunk.choices[0]?.finish_reason ?? reason;
    }
    expect(reason).toBe('tool_calls');
    expect(streamed.id).toMatch(/^call_/);
    expect({ name: streamed.name, args: JSON.parse(streamed.args) }).toEqual(call);

    // The tool's result comes back, and no call is asked for: the model answers in text.
    const final = await alice.chat.completions.create({
      model: TOOL_MODEL,
      tools: [short],
      tool_choice: 'none',
      temperature: 0,
      max_tokens: 16,
      messages: [...ask, { role: 'assistant', content: null, tool_calls: answer.choices[0]!.message.tool_calls }, { role: 'tool', tool_call_id: answer.choices[0]!.message.tool_calls![0]!.id, content: 'sunny' }],
    });
    expect(final.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(final.choices[0]!.message.content).toMatch(/\S/);
  });
});


describe('the Responses API with the official npm client', { timeout: 300_000 }, () => {
  it('answers text as the chat completion of the same conversation, whole and streamed', async () => {
    const request = { model: TINY_MODEL, instructions: 'Answer briefly.', input: 'Hello.', temperature: 0, max_output_tokens: 8 };
    const response = await alice.responses.create(request);
    const chat = await alice.chat.completions.create({ model: TINY_MODEL, messages: [{ role: 'system', content: 'Answer briefly.' }, { role: 'user', content: 'Hello.' }], temperature: 0, max_tokens: 8 });
    expect(response.output_text).toBe(chat.choices[0]!.message.content);
    expect(response.usage).toMatchObject({ input_tokens: chat.usage!.prompt_tokens, output_tokens: chat.usage!.completion_tokens });

    // stream: true gives the raw events; the last carries the whole response.
    let text = '';
    let last: OpenAI.Responses.ResponseStreamEvent | undefined;
    for await (const event of await alice.responses.create({ ...request, stream: true })) {
      if (event.type === 'response.output_text.delta') text += event.delta;
      last = event;
    }
    expect(text).toBe(response.output_text);
    expect(['response.completed', 'response.incomplete']).toContain(last!.type);
    expect((last as OpenAI.Responses.ResponseCompletedEvent).response.output).toEqual([expect.objectContaining({ type: 'message', content: [expect.objectContaining({ text })] })]);
    // responses.stream accumulates the events itself and refuses any out of OpenAI's order.
    const final = await alice.responses.stream(request).finalResponse();
    expect(final.output_text).toBe(response.output_text);
  });

  it('a forced function call, streamed alike, and its output sent back as an input item gets a text answer', async () => {
    const tool = { type: 'function' as const, name: 'get_weather', description: 'The weather in a city', strict: true, parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'], additionalProperties: false } };
    const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'What is the weather in Sydney?' }];
    const forced = { model: TOOL_MODEL, input, tools: [tool], tool_choice: { type: 'function' as const, name: 'get_weather' }, temperature: 0, max_output_tokens: 128 };
    const response = await alice.responses.create(forced);
    const calls = response.output.filter((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ name: 'get_weather', call_id: expect.stringMatching(/^call_/), status: 'completed' });
    expect(Object.keys(JSON.parse(calls[0]!.arguments) as object)).toEqual(['city']);

    const streamed = (await alice.responses.stream(forced).finalResponse()).output.filter((item) => item.type === 'function_call');
    expect(streamed.map((c) => [c.name, c.arguments])).toEqual(calls.map((c) => [c.name, c.arguments]));

    const answer = await alice.responses.create({
      ...forced,
      tool_choice: 'none',
      max_output_tokens: 16,
      // The answer's items go back as they came (a forced call has no text beside it).
      input: [...input, ...calls, { type: 'function_call_output', call_id: calls[0]!.call_id, output: 'sunny' }],
    });
    expect(answer.output.map((item) => item.type)).toEqual(['message']);
    expect(answer.output_text).toMatch(/\S/);
  });
});
