// POST /v1/responses on a real app, platform and infer worker with the tiny models (random weights; `tiny-qwen2.5` has
// Qwen2.5's published template, so tools): a Response is what the same chat completion answers, in OpenAI's shape,
// whole or as OpenAI's events; a forced function call and its result sent back; json_schema; what is not served is a
// 400 naming the field; another user's model a 404. Every response is checked against the committed OpenAPI document.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { newId } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { ResponseStreamEventData } from '@ftp/schema';
import { startWorker, type WorkerHandle } from '@ftp/worker';
import { checkedInject } from '../../../test/contract/openapi-contract.ts';
import { toolModelsDir, TINY_MODEL } from '../../../test/support/tiny-model.ts';
import { buildOpenAiApp } from '../src/app.ts';

let platform: TestPlatform;
let worker: WorkerHandle;
let app: FastifyInstance;

beforeAll(async () => {
  platform = await openTestPlatform({ MODELS_DIR: await toolModelsDir(), FAST_ENGINE_QUANTIZATION: 'f16', FAST_ENGINE_THREADS: '1', HF_ENDPOINT: 'http://127.0.0.1:9' });
  worker = await startWorker(platform, { queues: ['infer'] });
  app = await buildOpenAiApp(platform);
  await app.ready();
}, 300_000);
afterAll(async () => {
  await app?.close();
  await worker?.stop();
  await platform?.close();
});

const post = (url: string, payload: Record<string, unknown>) => checkedInject('openai', app, { method: 'POST', url, payload });
const respond = async (payload: Record<string, unknown>) => {
  const res = await post('/v1/responses', payload);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};

type Event = ResponseStreamEventData & Record<string, unknown>;
/** The events of a streamed response, in order (SSE comments skipped), each checked against the contract's schema. */
async function streamed(payload: Record<string, unknown>): Promise<Event[]> {
  const res = await post('/v1/responses', { ...payload, stream: true });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
  return res.body.split('\n\n').filter((block) => block.startsWith('event: ')).map((block) => {
    const [name, data] = block.split('\n') as [string, string];
    const event = ResponseStreamEventData.parse(JSON.parse(data.replace(/^data: /, ''))) as Event;
    expect(name).toBe(`event: ${event.type}`);
    return event;
  });
}

/** A response with its generated ids and time taken out, to compare two runs of one request. */
const settled = (response: Record<string, unknown>) => ({
  ...response,
  id: 'resp',
  created_at: 0,
  output: (response.output as Array<Record<string, unknown>>).map((item) => ({ ...item, id: item.type, ...(item.call_id ? { call_id: 'call' } : {}) })),
});

const TIME = { type: 'function', name: 'get_time', description: 'The time in a zone', parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } }, required: ['zone'] } };
const ASK_TIME = { model: 'tiny-qwen2.5', input: 'What time is it in Paris?', tools: [TIME], tool_choice: { type: 'function', name: 'get_time' }, temperature: 0, max_output_tokens: 100 };

describe('a response', { timeout: 300_000 }, () => {
  it('is the chat completion of the same conversation in OpenAI’s Response shape: instructions a system message first, usage the engine’s counts', async () => {
    const request = { model: TINY_MODEL, instructions: 'Answer briefly.', input: 'Hello.', temperature: 0, max_output_tokens: 6, metadata: { run: 'shape' } };
    const response = await respond(request);
    const chat = (await post('/v1/chat/completions', { model: TINY_MODEL, messages: [{ role: 'system', content: 'Answer briefly.' }, { role: 'user', content: 'Hello.' }], temperature: 0, max_tokens: 6 })).json();
    const cut = chat.choices[0].finish_reason === 'length';
    expect(response).toMatchObject({
      id: expect.stringMatching(/^resp_/), object: 'response', model: TINY_MODEL, status: cut ? 'incomplete' : 'completed',
      incomplete_details: cut ? { reason: 'max_output_tokens' } : null, error: null, instructions: 'Answer briefly.', max_output_tokens: 6,
      metadata: { run: 'shape' }, store: false, previous_response_id: null, temperature: 0, text: { format: { type: 'text' } }, tools: [], tool_choice: 'auto',
      output: [{ type: 'message', id: expect.stringMatching(/^msg_/), role: 'assistant', status: cut ? 'incomplete' : 'completed', content: [{ type: 'output_text', text: chat.choices[0].message.content, annotations: [] }] }],
      usage: { input_tokens: chat.usage.prompt_tokens, output_tokens: chat.usage.completion_tokens, total_tokens: chat.usage.total_tokens, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
    });
    // Without instructions the prompt is shorter by the system turn; input as message items is the same as a string.
    const plain = await respond({ ...request, instructions: undefined, input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hello.' }] }] });
    expect(plain.usage.input_tokens).toBeLessThan(response.usage.input_tokens);
    expect(plain.usage.input_tokens).toBe((await respond({ ...request, instructions: undefined })).usage.input_tokens);
  });

  it('follows text.format json_schema (the grammar chat’s response_format uses)', async () => {
    const schema = { type: 'object', properties: { answer: { type: 'string', maxLength: 6 } }, required: ['answer'], additionalProperties: false };
    const response = await respond({ model: TINY_MODEL, input: 'Reply in JSON.', temperature: 0, max_output_tokens: 64, text: { format: { type: 'json_schema', name: 'reply', schema, strict: true } } });
    expect(response.status).toBe('completed');
    const parsed = JSON.parse(response.output[0].content[0].text) as { answer: string };
    expect(Object.keys(parsed)).toEqual(['answer']);
    expect(parsed.answer.length).toBeLessThanOrEqual(6);
  });

  it('with a forced tool_choice is a function_call item; its output sent back gets a text answer', async () => {
    const response = await respond(ASK_TIME);
    expect(response.status).toBe('completed');
    const calls = (response.output as Array<Record<string, string>>).filter((item) => item.type === 'function_call');
    expect(calls).toEqual([{ type: 'function_call', id: expect.stringMatching(/^fc_/), call_id: expect.stringMatching(/^call_/), name: 'get_time', arguments: expect.any(String), status: 'completed' }]);
    expect(['UTC', 'CET']).toContain(JSON.parse(calls[0]!.arguments!).zone);
    expect(response.tools).toEqual([{ ...TIME, strict: null }]);

    const answer = await respond({ ...ASK_TIME, tool_choice: 'none', max_output_tokens: 8, input: [{ role: 'user', content: ASK_TIME.input }, ...response.output, { type: 'function_call_output', call_id: calls[0]!.call_id, output: '12:00' }] });
    expect(answer.output.map((item: { type: string }) => item.type)).toEqual(['message']);
    expect(answer.usage.input_tokens).toBeGreaterThan(response.usage.input_tokens); // the call and its result are in the prompt
  });

  it('streams OpenAI’s events in order, numbered, whose deltas make the text and whose last is the response unstreamed', async () => {
    const request = { model: TINY_MODEL, input: 'Hello.', temperature: 0, max_output_tokens: 12 };
    const [whole, events] = [await respond(request), await streamed(request)];
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const types = events.map((e) => e.type);
    const last = whole.status === 'completed' ? 'response.completed' : 'response.incomplete';
    expect(types.filter((t) => t !== 'response.output_text.delta')).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', last]);
    expect(types.indexOf('response.output_text.delta')).toBe(4);
    const deltas = events.filter((e) => e.type === 'response.output_text.delta');
    expect(deltas.length).toBeGreaterThan(1);
    const text = deltas.map((e) => e.delta).join('');
    expect(events.find((e) => e.type === 'response.output_text.done')).toMatchObject({ text });
    const final = events.at(-1)!.response as Record<string, unknown>;
    expect(settled(final)).toEqual(settled(whole));
    expect((events[0]!.response as { status: string }).status).toBe('in_progress');
  });

  it('streams a function call as OpenAI does: the item added, its arguments in deltas, done', async () => {
    const [whole, events] = [await respond(ASK_TIME), await streamed(ASK_TIME)];
    expect(events.map((e) => e.type)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done', 'response.completed']);
    const added = events.find((e) => e.type === 'response.output_item.added' && (e.item as { type: string }).type === 'function_call')!;
    const args = events.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.delta).join('');
    expect(events.find((e) => e.type === 'response.function_call_arguments.done')).toMatchObject({ item_id: (added.item as { id: string }).id, name: 'get_time', arguments: args });
    expect(settled(events.at(-1)!.response as Record<string, unknown>)).toEqual(settled(whole));
  });
});

describe('what is not served', () => {
  const base = { model: TINY_MODEL, input: 'Hello.' };
  it.each([
    ['a built-in tool', { tools: [{ type: 'web_search' }] }, 'tools.0.type', /built-in tool web_search is not supported/],
    ['background mode', { background: true }, 'background', /background mode is not supported/],
    ['previous_response_id', { previous_response_id: 'resp_1' }, 'previous_response_id', /send the whole conversation in input/],
    ['store true', { store: true }, 'store', /send the whole conversation in input/],
    ['a conversation', { conversation: 'conv_1' }, 'conversation', /send the whole conversation in input/],
    ['reasoning', { reasoning: { effort: 'high' } }, 'reasoning', /no reasoning model is served/],
    ['an image', { input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: 'https://example.com/a.png' }] }] }, 'input.0.content.1.type', /input_image parts are not supported/],
    ['a reasoning item', { input: [{ type: 'reasoning', id: 'rs_1', summary: [] }] }, 'input.0.type', /input items of type reasoning are not supported/],
    ['a function_call_output of no call', { input: [{ type: 'function_call_output', call_id: 'call_x', output: 'sunny' }] }, 'input.0.call_id', /no earlier function_call item has that call_id/],
    ['a tool_choice naming no tool', { tools: [TIME], tool_choice: { type: 'function', name: 'get_date' } }, 'tool_choice.name', /not in tools \(get_time\)/],
  ])('%s is a 400 naming the field', async (_, extra, param, message) => {
    const res = await post('/v1/responses', { ...base, ...extra });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param, message: expect.stringMatching(message) });
  });

  it('store false, reasoning effort none and text.format text are accepted; tools on a template without them are chat’s 400', async () => {
    const tools = await post('/v1/responses', { ...base, tools: [TIME] });
    expect(tools.statusCode).toBe(400);
    expect(tools.json().error).toMatchObject({ param: 'tools', message: expect.stringMatching(/has no tool support/) });
    const history = await post('/v1/responses', { ...base, input: [{ type: 'function_call', call_id: 'call_1', name: 'get_time', arguments: '{}' }, { type: 'function_call_output', call_id: 'call_1', output: '12:00' }] });
    expect(history.json().error).toMatchObject({ param: 'input', message: expect.stringMatching(/has no tool support/) });
    const res = await post('/v1/responses', { ...base, store: false, reasoning: { effort: 'none' }, text: { format: { type: 'text' } }, max_output_tokens: 2 });
    expect(res.statusCode, res.body).toBe(200);
  }, 120_000);

  it('another user’s fine-tuned model is a 404 model_not_found', async () => {
    const jobId = newId('job');
    await platform.jobs.insert({ job_id: jobId, user_id: 'someone-else', job_name: 'theirs', processed_dataset_id: 'pd_x', base_model_id: TINY_MODEL, modality: 'text', training_config: {}, blob_prefix: `jobs/someone-else/${jobId}/`, tracker_url: null });
    await platform.jobs.update(jobId, { status: 'completed' }, ['queued']);
    const res = await post('/v1/responses', { ...base, model: `ft:${TINY_MODEL}:custom:${jobId}` });
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toMatchObject({ code: 'model_not_found' });
  });
});
