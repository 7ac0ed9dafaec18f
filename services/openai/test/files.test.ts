// /v1/files and the lines of a fine-tuning file, on a real app and platform: a line no reader may build whole is
// refused with its number and leaves nothing stored, a line that no tokenizer can encode fails the job at that line,
// and tool conversations are kept as OpenAI means them, or refused with their line and reason.
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { TestPlatform } from '@ftp/platform/testing';
import { MAX_ROW_BYTES } from '@ftp/datasets';
import { toolModelsDir, TINY_MODEL } from '../../../test/support/tiny-model.ts';
import { uncaughtDuring } from '../../../test/support/uncaught.ts';
import { openAiTestApp, uploadFineTuneFile, type OpenAiTestApp } from './support.ts';

let opened: OpenAiTestApp;
let platform: TestPlatform;
let app: FastifyInstance;

beforeAll(async () => {
  opened = await openAiTestApp(await toolModelsDir());
  ({ platform, app } = opened);
}, 180_000);

afterAll(() => opened?.close());

const upload = (name: string, content: string | Buffer) => uploadFineTuneFile(app, name, content);

async function storedFiles(): Promise<string[]> {
  const root = path.join(platform.dataDir, 'blobs');
  const found: string[] = [];
  for (const entry of await fs.readdir(root, { recursive: true, withFileTypes: true }).catch(() => [])) if (entry.isFile()) found.push(entry.name);
  return found;
}

describe('POST /v1/files', () => {
  it('refuses a line over the row limit with its number, keeping no file and no row', async () => {
    // No newline at all, as in a file cut wrong: once read whole by readline, a 600 MiB one ended the process.
    let response!: Awaited<ReturnType<typeof upload>>;
    // Nothing uncaught: the old readline crash would show here even behind the process's last line of defence.
    const uncaught = await uncaughtDuring(async () => {
      response = await upload('one-line.jsonl', `{"messages": [{"role": "user", "content": "${'x'.repeat(MAX_ROW_BYTES)}`);
    });
    expect(uncaught).toEqual([]);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatchObject({ type: 'invalid_request_error', message: 'JSONL line 1 is longer than 32 MiB; rows must be smaller (is a newline missing?).' });
    expect(await storedFiles()).toEqual([]);
    expect(await platform.datasets.listRaw('local')).toEqual([]);
  });
});

describe('a fine-tuning file with a lone surrogate', () => {
  it('fails the job at that line, before any dataset is made', async () => {
    const good = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] });
    const bad = '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "broken \\udc00"}]}';
    const file = await upload('surrogate.jsonl', `${good}\n${bad}\n`);
    expect(file.statusCode).toBe(200);
    const job = await app.inject({ method: 'POST', url: '/v1/fine_tuning/jobs', payload: { model: TINY_MODEL, training_file: file.json().id } });
    expect(job.statusCode).toBe(200);
    expect(job.json()).toMatchObject({
      status: 'failed',
      error: {
        code: 'invalid_training_file',
        param: 'training_file',
        message: expect.stringMatching(/line 2: the string at messages\[1\]\.content holds a lone UTF-16 surrogate/),
      },
    });
    expect(await platform.datasets.listProcessed('local')).toEqual([]);
  });
});

const WEATHER = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

/** A line in OpenAI's format: the user asks, the assistant calls get_weather, the tool answers, the assistant says it. */
function toolLine(city: string, change: (line: { tools: unknown[]; messages: Record<string, unknown>[]; parallel_tool_calls?: boolean }) => void = () => {}) {
  const line = {
    tools: [WEATHER] as unknown[],
    messages: [
      { role: 'user', content: `Weather in ${city}?` },
      { role: 'assistant', content: null, tool_calls: [{ id: `call_${city}`, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify({ city }) } }] },
      { role: 'tool', tool_call_id: `call_${city}`, content: 'sunny' },
      { role: 'assistant', content: `Sunny in ${city}.` },
    ] as Record<string, unknown>[],
  };
  change(line);
  return JSON.stringify(line);
}

async function jobFor(model: string, lines: string[]) {
  const file = await upload('tools.jsonl', lines.join('\n'));
  expect(file.statusCode).toBe(200);
  return app.inject({ method: 'POST', url: '/v1/fine_tuning/jobs', payload: { model, training_file: file.json().id } });
}

describe('a fine-tuning file with tools', () => {
  it('is kept as OpenAI means it: tools, calls with JSON-string arguments, tool results, parallel calls', async () => {
    const parallel = toolLine('Oslo', (l) => {
      const calls = (l.messages[1]!['tool_calls'] as unknown[]);
      calls.push({ id: 'call_Lima', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Lima"}' } });
      l.messages.splice(3, 0, { role: 'tool', tool_call_id: 'call_Lima', content: 'cloudy' });
    });
    const job = await jobFor('tiny-qwen2.5', [toolLine('Paris'), parallel]);
    expect(job.statusCode).toBe(200);
    expect(job.json()).toMatchObject({ status: 'queued', error: null });
    const row = await platform.jobs.get('local', job.json().id);
    const dataset = (await platform.datasets.getProcessed('local', row!.processed_dataset_id!))!;
    expect(dataset.columns).toEqual(['messages', 'tools']);
    const [first, second] = dataset.splits[0]!.samples as Array<{ tools: unknown[]; messages: Array<Record<string, unknown>> }>;
    expect(first!.tools).toEqual([WEATHER]);
    expect(first!.messages[1]).toEqual({ role: 'assistant', content: '', tool_calls: [{ id: 'call_Paris', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] });
    expect(first!.messages[2]).toEqual({ role: 'tool', tool_call_id: 'call_Paris', content: 'sunny' });
    expect(second!.messages.map((m) => m['role'])).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
  });

  it('on a base model whose template has no tool support is refused at submit, naming the model', async () => {
    const job = await jobFor(TINY_MODEL, [toolLine('Paris')]);
    expect(job.statusCode).toBe(400);
    expect(job.json().error.message).toMatch(/the chat template of base model "tiny" has no tool support .* the dataset's records use tools/);
  });

  it.each([
    ['arguments that are not JSON', (l: { messages: Record<string, unknown>[] }) => { ((l.messages[1]!['tool_calls'] as Array<{ function: { arguments: string } }>)[0]!.function.arguments = '{city: Rome'); },
      /line 2: messages\[1\]\.tool_calls\[0\]\.function\.arguments is not JSON/],
    ['a tool message with no matching call', (l: { messages: Record<string, unknown>[] }) => { l.messages[2]!['tool_call_id'] = 'call_other'; },
      /line 2: messages\[2\] answers tool_call_id "call_other", but no earlier assistant message made a call with that id/],
    ['a call to a function not in tools', (l: { messages: Record<string, unknown>[] }) => { ((l.messages[1]!['tool_calls'] as Array<{ function: { name: string } }>)[0]!.function.name = 'get_time'); },
      /line 2: messages\[1\]\.tool_calls\[0\] calls "get_time", which is not in tools \(the tools are get_weather\)/],
    ['two calls in a turn with parallel_tool_calls false', (l: { messages: Record<string, unknown>[]; parallel_tool_calls?: boolean }) => {
      l.parallel_tool_calls = false;
      (l.messages[1]!['tool_calls'] as unknown[]).push({ id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{}' } });
    }, /line 2: messages\[1\] makes 2 tool calls, but the line sets parallel_tool_calls false/],
  ])('with %s fails the job at that line, making no dataset', async (_, change, message) => {
    const before = (await platform.datasets.listProcessed('local')).length;
    const job = await jobFor('tiny-qwen2.5', [toolLine('Paris'), toolLine('Rome', change)]);
    expect(job.statusCode).toBe(200);
    expect(job.json()).toMatchObject({ status: 'failed', error: { code: 'invalid_training_file', param: 'training_file', message: expect.stringMatching(message) } });
    expect(await platform.datasets.listProcessed('local')).toHaveLength(before);
  });
});
