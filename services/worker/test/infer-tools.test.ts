// Tool conversations on both engines, with the tiny Qwen2.5-format model (its family's published template): the
// tools are written into the prompt by that template on each engine alike (the same prompt tokens on llama.cpp as on
// transformers), a conversation holding a call and its result renders too, and both engines answer the same greedy
// text; and a forced call (tool_choice required or named) is a call in the family's format whose arguments follow the
// tool's schema, on both engines, even from this untrained model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { inferQueue, type GenerationSettings, type InferResult } from '@ftp/jobs/queues';
import type { PlainMessage } from '@ftp/schema';
import { parseToolCalls } from '@ftp/jobs/openai';
import { toolModelsDir } from '../../../test/support/tiny-model.ts';
import { startWorker, type WorkerHandle } from '../src/index.ts';

const WEATHER = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };
const QUESTION: PlainMessage[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
const FOLLOW_UP: PlainMessage[] = [
  ...QUESTION,
  { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
  { role: 'tool', content: 'sunny', tool_call_id: 'call_1' },
];

let platform: TestPlatform;
let worker: WorkerHandle;

beforeAll(async () => {
  platform = await openTestPlatform({ MODELS_DIR: await toolModelsDir(), FAST_ENGINE_QUANTIZATION: 'f16', FAST_ENGINE_THREADS: '1', HF_ENDPOINT: 'http://127.0.0.1:9' });
  worker = await startWorker(platform, { queues: ['infer'] });
}, 300_000);
afterAll(async () => {
  await worker?.stop();
  await platform?.close();
});

function infer(model: string, fast: boolean, conversations: PlainMessage[][], generation: Partial<GenerationSettings> = {}): Promise<InferResult> {
  return platform.queue.request(inferQueue, {
    userId: 'u-tools',
    model: { model_source: 'base', base_model_id: model, use_fast_engine: fast },
    conversations,
    generation: { max_new_tokens: 8, temperature: 0, ...generation },
  });
}

// Arguments of enums: an untrained model, forced, ends its call in a few tokens (a free string could run on).
const TIME = { type: 'function', function: { name: 'get_time', description: 'The time in a zone', parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } }, required: ['zone'] } } };
const DATE = { type: 'function', function: { name: 'get_date', description: 'The date of a day', parameters: { type: 'object', properties: { day: { type: 'string', enum: ['today', 'tomorrow'] } }, required: ['day'] } } };
/** The call schema the /v1 route makes of tool_choice, in each family's format (chat-tools.ts forcedCall). */
const FORCED = {
  'tiny-qwen2.5': { prefix: '<tool_call>\n', suffix: '\n</tool_call>', key: 'arguments' },
  'tiny-llama3': { prefix: '', suffix: '', key: 'parameters' },
} as const;
type Tool = { function: { name: string; parameters: Record<string, unknown> } };
function callSchema(model: keyof typeof FORCED, tools: Tool[]) {
  const one = (t: Tool) => ({ type: 'object', properties: { name: { const: t.function.name }, [FORCED[model].key]: t.function.parameters }, required: ['name', FORCED[model].key], additionalProperties: false });
  return { schema: tools.length === 1 ? one(tools[0]!) : { oneOf: tools.map(one) }, prefix: FORCED[model].prefix, suffix: FORCED[model].suffix };
}

describe.each(['tiny-qwen2.5', 'tiny-llama3'] as const)('tool conversations with %s', (model) => {
  it('are rendered with the tools by the model\'s own template, alike on both engines', async () => {
    const withTools = { tools: [WEATHER] };
    const [plainSlow, toolsSlow, toolsFast] = [
      await infer(model, false, [QUESTION]),
      await infer(model, false, [QUESTION, FOLLOW_UP], withTools),
      await infer(model, true, [QUESTION, FOLLOW_UP], withTools),
    ];
    const prompts = (r: InferResult) => r.details.map((d) => d.prompt_tokens);
    expect(prompts(toolsSlow)[0]!).toBeGreaterThan(prompts(plainSlow)[0]! + 20); // the tool definitions are in it
    expect(prompts(toolsSlow)[1]!).toBeGreaterThan(prompts(toolsSlow)[0]!); // the call and its result too
    expect(prompts(toolsFast)).toEqual(prompts(toolsSlow));
    expect(toolsFast.results).toEqual(toolsSlow.results);
  }, 300_000);

  it.each([false, true])('a forced call is a call of the named function with arguments of its schema (fast engine: %s)', async (fast) => {
    const named = await infer(model, fast, [QUESTION], { tools: [WEATHER, TIME], forced_call: callSchema(model, [TIME]), max_new_tokens: 100 });
    expect(named.details[0]!.finish_reason, JSON.stringify(named.results[0])).toBe('stop');
    const [call] = parseToolCalls(named.results[0]!, ['get_weather', 'get_time']).calls;
    expect(call?.name, named.results[0]).toBe('get_time');
    expect(['UTC', 'CET']).toContain(JSON.parse(call!.arguments).zone);
    const required = await infer(model, fast, [QUESTION], { tools: [TIME, DATE], forced_call: callSchema(model, [TIME, DATE]), max_new_tokens: 100 });
    const { calls } = parseToolCalls(required.results[0]!, ['get_time', 'get_date']);
    expect(calls, required.results[0]).toHaveLength(1);
  }, 300_000);
});
