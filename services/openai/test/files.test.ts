// /v1/files and the lines of a fine-tuning file, on a real app and platform: a line no reader may build whole is
// refused with its number and leaves nothing stored, and a line that no tokenizer can encode fails the job at that line.
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { MAX_ROW_BYTES } from '@ftp/datasets';
import { multipartBody } from '../../preprocessing/test/support.ts';
import { tinyModelsDir, TINY_MODEL } from '../../../test/support/tiny-model.ts';
import { uncaughtDuring } from '../../../test/support/uncaught.ts';
import { buildOpenAiApp } from '../src/app.ts';

let platform: TestPlatform;
let app: FastifyInstance;

beforeAll(async () => {
  platform = await openTestPlatform({ MODELS_DIR: await tinyModelsDir() });
  app = await buildOpenAiApp(platform);
  await app.ready();
}, 180_000);

afterAll(async () => {
  await app?.close();
  await platform?.close();
});

const upload = (name: string, content: string | Buffer) => {
  const { body, contentType } = multipartBody(name, content);
  const purpose = Buffer.from(`--${contentType.split('boundary=')[1]}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nfine-tune\r\n`);
  return app.inject({ method: 'POST', url: '/v1/files', payload: Buffer.concat([purpose, body]), headers: { 'content-type': contentType } });
};

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
