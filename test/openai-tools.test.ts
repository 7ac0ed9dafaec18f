// Function calling through the official npm client, unchanged, against this worker's shared embedded stack: a
// fine-tuning file of get_weather conversations with a bad line fails the job with the line's number; a named
// tool_choice on tiny-qwen2.5 (random weights, Qwen2.5's published template) is a call in the family's format whose
// arguments follow the tool's schema, streamed as OpenAI streams calls, and a tool's result then gets a text answer;
// and a pretrained model, fine-tuned on three dozen such conversations, calls the tool unforced for cities it never
// saw, on both engines, streamed and not. That one is SmolLM2-135M-Instruct with Qwen2.5's template: a random-init
// model cannot learn in a test's time to copy an unseen city into the call (it memorises the cities it saw).
import OpenAI, { toFile } from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/http.ts';
import { sharedStack, TOOL_MODEL } from './support/shared-stack.ts';
import { PRETRAINED_TOOL_MODEL } from './support/tiny-model.ts';

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

  it('a pretrained model fine-tuned on three dozen get_weather conversations calls it for unseen cities, on both engines, streamed and not', async () => {
    const asks = ['What is the weather in {c}?', 'How is the weather in {c} today?', 'Is it raining in {c}?', 'Weather for {c}, please.', "What's it like outside in {c}?", 'Tell me the weather in {c}.'];
    const lines = TRAINING_CITIES.map((city, i) => line(city, i, asks[i % asks.length]!.replace('{c}', city)));
    const file = await alice.files.create({ file: await toFile(Buffer.from(lines.join('\n')), 'weather-calls.jsonl'), purpose: 'fine-tune' });
    // 18 steps of 4; LoRA r16 at 4e-3 (OpenAI's multiplier over our 2e-4): about 85 s of training on two CPU cores.
    const created = await alice.fineTuning.jobs.create({
      model: PRETRAINED_TOOL_MODEL,
      training_file: file.id,
      seed: 42,
      method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 2, batch_size: 4, learning_rate_multiplier: 20 } } },
    });
    const job = await finished(created.id);
    expect(job.status, JSON.stringify(job.error)).toBe('succeeded');

    /** How many of the unseen cities get the call get_weather({city}) with tool_choice auto and no grammar. */
    const score = async (model: string, fast: boolean, stream: boolean) => {
      const called = await Promise.all(UNSEEN_CITIES.map(async (city) => {
        const request = { model, messages: [{ role: 'user' as const, content: `What is the weather in ${city}?` }], tools: [WEATHER], temperature: 0, max_tokens: 40 };
        const extension = { use_fast_engine: fast }; // ours: which engine runs it
        const answer = stream ? await streamedAnswer({ ...request, ...extension }) : await plainAnswer({ ...request, ...extension });
        return answer.finish === 'tool_calls' && answer.calls.length === 1 && answer.calls[0]!.name === 'get_weather' && jsonOr(answer.calls[0]!.arguments)?.city === city;
      }));
      return called.filter(Boolean).length;
    };
    // The base does not call it: what the fine-tuned model does, it learnt.
    const base = await score(PRETRAINED_TOOL_MODEL, true, false);
    expect(base).toBeLessThanOrEqual(2);
    const model = job.fine_tuned_model!;
    const scores = { llamaCpp: await score(model, true, false), llamaCppStreamed: await score(model, true, true), transformers: await score(model, false, false), transformersStreamed: await score(model, false, true) };
    console.info(`unseen cities called right, of 10: base ${base}, fine-tuned ${JSON.stringify(scores)}`);
    for (const right of Object.values(scores)) expect(right, JSON.stringify(scores)).toBeGreaterThanOrEqual(8);
  });
});

const TRAINING_CITIES = [
  'Paris', 'Rome', 'Oslo', 'Lima', 'Berlin', 'Madrid', 'Tokyo', 'Cairo', 'Dublin', 'Vienna', 'Prague', 'Warsaw', 'Athens', 'Lisbon', 'Boston', 'Denver',
  'Seattle', 'Chicago', 'Toronto', 'Montreal', 'Mumbai', 'Delhi', 'Beijing', 'Shanghai', 'Seoul', 'Bangkok', 'Jakarta', 'Manila', 'Nairobi', 'Lagos', 'Havana', 'Quito',
  'Hamburg', 'Munich', 'Krakow', 'Seville',
];
const UNSEEN_CITIES = ['Sydney', 'Perth', 'Milan', 'Naples', 'Lyon', 'Nice', 'Porto', 'Bergen', 'Geneva', 'Zurich'];

interface Answer {
  finish: string | null;
  calls: Array<{ name: string; arguments: string }>;
}

const jsonOr = (text: string): Record<string, unknown> | undefined => {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
};

async function plainAnswer(request: ChatCompletionCreateParamsNonStreaming): Promise<Answer> {
  const choice = (await alice.chat.completions.create(request)).choices[0]!;
  return { finish: choice.finish_reason, calls: (choice.message.tool_calls ?? []).map((c) => (c.type === 'function' ? c.function : { name: '', arguments: '' })) };
}

/** The calls of a streamed answer, put together from their deltas as the SDK's users do. */
async function streamedAnswer(request: ChatCompletionCreateParamsNonStreaming): Promise<Answer> {
  const calls: Answer['calls'] = [];
  let finish: string | null = null;
  for await (const chunk of await alice.chat.completions.create({ ...request, stream: true })) {
    for (const part of chunk.choices[0]?.delta?.tool_calls ?? []) {
      const call = (calls[part.index] ??= { name: '', arguments: '' });
      call.name += part.function?.name ?? '';
      call.arguments += part.function?.arguments ?? '';
    }
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  return { finish, calls };
}
