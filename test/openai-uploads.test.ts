// /v1/uploads, OpenAI's Uploads API (and pause/resume of the job made from it), driven by both official SDKs unchanged against a real app on a real platform: a
// file in several parts becomes a /v1 file with the same bytes that a fine-tuning job takes; a wrong byte count or md5
// is OpenAI's error and leaves the upload open; a process that stops between parts loses none; a part over the limit
// is a 413; cancel and expiry remove the parts.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { loadConfig, openPlatform, type Platform } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { DEFAULT_CORE_PYTHON } from '@ftp/core-client';
import { reconcile } from '@ftp/jobs/runtime';
import { toolModelsDir, TINY_MODEL } from './support/tiny-model.ts';
import { buildOpenAiApp } from '@ftp/openai';

/** The deployment's upload limit here, so that a part over it is cheap to send. */
const MAX_UPLOAD_BYTES = 1024 * 1024;

let platform: TestPlatform;
let app: FastifyInstance;
let client: OpenAI;

async function listen(on: Platform): Promise<{ app: FastifyInstance; client: OpenAI }> {
  const opened = await buildOpenAiApp(on);
  const address = await opened.listen({ host: '127.0.0.1', port: 0 });
  return { app: opened, client: new OpenAI({ baseURL: `${address}/v1`, apiKey: 'unused', maxRetries: 0 }) };
}

beforeAll(async () => {
  platform = await openTestPlatform({ MODELS_DIR: await toolModelsDir(), MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES) });
  ({ app, client } = await listen(platform));
}, 120_000);
afterAll(async () => {
  await app?.close();
  await platform?.close();
});

/** A chat JSONL file of `lines` conversations. */
const chatLines = (lines: number, tag = 'a') =>
  Array.from({ length: lines }, (_, i) => JSON.stringify({ messages: [{ role: 'user', content: `question ${tag}${i}` }, { role: 'assistant', content: `answer ${tag}${i}` }] })).join('\n') + '\n';
const md5 = (bytes: Buffer | string) => createHash('md5').update(bytes).digest('hex');
const split = (bytes: Buffer, size: number) => Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));

async function blobsUnder(dataDir: string, prefix: string): Promise<string[]> {
  const root = path.join(dataDir, 'blobs', prefix);
  return (await fs.readdir(root, { recursive: true }).catch(() => [])).map(String);
}

async function sendParts(on: OpenAI, uploadId: string, parts: Buffer[]): Promise<string[]> {
  const ids: string[] = [];
  for (const [i, bytes] of parts.entries()) ids.push((await on.uploads.parts.create(uploadId, { data: await toFile(bytes, `part-${i}`) })).id);
  return ids;
}

describe('an upload in parts (npm SDK)', () => {
  it('becomes a file with the same bytes, in the order the parts are named, that a fine-tuning job takes', async () => {
    const bytes = Buffer.from(chatLines(400));
    const upload = await client.uploads.create({ bytes: bytes.length, filename: 'train.jsonl', mime_type: 'application/jsonl', purpose: 'fine-tune' });
    expect(upload).toMatchObject({ id: expect.stringMatching(/^upload_/), object: 'upload', status: 'pending', bytes: bytes.length, filename: 'train.jsonl', purpose: 'fine-tune', file: null });
    expect(upload.expires_at - upload.created_at).toBe(3600);

    // Sent out of order; named in order at completion.
    const parts = split(bytes, Math.ceil(bytes.length / 3));
    const [last, ...firstTwo] = await sendParts(client, upload.id, [parts[2]!, parts[0]!, parts[1]!]);
    const completed = await client.uploads.complete(upload.id, { part_ids: [...firstTwo, last!], md5: md5(bytes) });
    expect(completed).toMatchObject({ status: 'completed', file: { object: 'file', bytes: bytes.length, filename: 'train.jsonl', purpose: 'fine-tune', status: 'processed' } });
    const fileId = completed.file!.id;
    expect(Buffer.from(await (await client.files.content(fileId)).arrayBuffer()).equals(bytes)).toBe(true);
    expect((await client.files.list()).data.map((f) => f.id)).toContain(fileId);
    // The parts are gone once joined.
    expect(await blobsUnder(platform.dataDir, `uploads/`)).toEqual([]);

    const job = await client.fineTuning.jobs.create({ model: TINY_MODEL, training_file: fileId, method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 1 } } } });
    expect(job.status).not.toBe('failed');
    expect(job.training_file).toBe(fileId);
    // No worker here: the job waits queued, so it pauses at once and resumes to the queue (the SDK's own calls).
    expect((await client.fineTuning.jobs.pause(job.id)).status).toBe('paused');
    await expect(client.fineTuning.jobs.pause(job.id)).rejects.toBeInstanceOf(OpenAI.ConflictError);
    expect((await client.fineTuning.jobs.resume(job.id)).status).toBe('queued');
  });

  it('refuses a byte count or md5 that does not match with OpenAI’s error, and stays open for the right ones', async () => {
    const bytes = Buffer.from(chatLines(20, 'b'));
    const upload = await client.uploads.create({ bytes: bytes.length + 1, filename: 'short.jsonl', mime_type: 'application/jsonl', purpose: 'fine-tune' });
    const ids = await sendParts(client, upload.id, split(bytes, 512));
    const short = await client.uploads.complete(upload.id, { part_ids: ids }).catch((err: unknown) => err);
    expect(short).toBeInstanceOf(OpenAI.BadRequestError);
    expect((short as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({
      type: 'invalid_request_error', param: 'part_ids', message: `part_ids: the parts named add up to ${bytes.length} bytes, but the upload was created for ${bytes.length + 1}; send the missing parts, or start a new upload with the right bytes`,
    });
    ids.push(...(await sendParts(client, upload.id, [Buffer.from('\n')])));
    const wrongMd5 = await client.uploads.complete(upload.id, { part_ids: ids, md5: md5('something else') }).catch((err: unknown) => err);
    expect(wrongMd5).toBeInstanceOf(OpenAI.BadRequestError);
    expect((wrongMd5 as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ param: 'md5', message: expect.stringContaining(`is not the joined file's (${md5(Buffer.concat([bytes, Buffer.from('\n')]))})`) });
    const stranger = await client.uploads.complete(upload.id, { part_ids: [...ids, 'part_0123456789abcdef01234567'] }).catch((err: unknown) => err);
    expect((stranger as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({
      param: `part_ids.${ids.length}`, message: `part_ids.${ids.length}: part_0123456789abcdef01234567 is not a part of the upload ${upload.id}; name the ids POST /v1/uploads/${upload.id}/parts returned`,
    });
    const twice = await client.uploads.complete(upload.id, { part_ids: [ids[0]!, ids[0]!] }).catch((err: unknown) => err);
    expect((twice as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ param: 'part_ids.1', message: `part_ids.1: ${ids[0]} is named twice; name each part once` });

    const completed = await client.uploads.complete(upload.id, { part_ids: ids });
    expect(completed.status).toBe('completed');
    // Ended: no more parts, no second completion, no cancel.
    const late = await sendParts(client, upload.id, [Buffer.from('x')]).catch((err: unknown) => err);
    expect(late).toBeInstanceOf(OpenAI.ConflictError);
    expect((late as Error).message).toContain(`the upload ${upload.id} is completed`);
    await expect(client.uploads.cancel(upload.id)).rejects.toBeInstanceOf(OpenAI.ConflictError);
    await expect(client.uploads.complete(upload.id, { part_ids: ids })).rejects.toBeInstanceOf(OpenAI.ConflictError);
    await expect(client.uploads.cancel('upload_0123456789abcdef01234567')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('refuses a part over the limit with a 413 and keeps the parts it took', async () => {
    const upload = await client.uploads.create({ bytes: MAX_UPLOAD_BYTES, filename: 'big.jsonl', mime_type: 'application/jsonl', purpose: 'fine-tune' });
    const [kept] = await sendParts(client, upload.id, [Buffer.alloc(1000, 'a')]);
    const over = await sendParts(client, upload.id, [Buffer.alloc(MAX_UPLOAD_BYTES + 1, 'b')]).catch((err: unknown) => err);
    expect(over).toBeInstanceOf(OpenAI.APIError);
    expect((over as InstanceType<typeof OpenAI.APIError>).status).toBe(413);
    expect((over as Error).message).toContain(`a part may carry at most ${MAX_UPLOAD_BYTES} bytes`);
    const prefix = (await platform.uploads.get('local', upload.id))!.blob_prefix;
    expect(await blobsUnder(platform.dataDir, prefix)).toEqual([kept]);
    const tooBig = await client.uploads.create({ bytes: MAX_UPLOAD_BYTES + 1, filename: 'x.jsonl', mime_type: 'application/jsonl', purpose: 'fine-tune' }).catch((err: unknown) => err);
    expect((tooBig as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ param: 'bytes' });

    // Parts may not pile up past the declared bytes (and one part more): the 1,000 bytes sent and 2 MiB are too many.
    const [more] = await sendParts(client, upload.id, [Buffer.alloc(MAX_UPLOAD_BYTES, 'c')]);
    const past = await sendParts(client, upload.id, [Buffer.alloc(MAX_UPLOAD_BYTES, 'd')]).catch((err: unknown) => err);
    expect((past as InstanceType<typeof OpenAI.APIError>).status).toBe(413);
    expect((past as Error).message).toContain(`would add up to ${1000 + 2 * MAX_UPLOAD_BYTES} bytes, more than the ${MAX_UPLOAD_BYTES} it was created for`);
    expect((await blobsUnder(platform.dataDir, prefix)).sort()).toEqual([kept, more].sort());

    // Cancelled: its parts removed.
    expect((await client.uploads.cancel(upload.id)).status).toBe('cancelled');
    expect(await blobsUnder(platform.dataDir, prefix)).toEqual([]);
  });

  it('expires an hour after it began: the reconciler removes its parts and it takes no more', async () => {
    const upload = await client.uploads.create({ bytes: 10, filename: 'late.jsonl', mime_type: 'application/jsonl', purpose: 'fine-tune' });
    await sendParts(client, upload.id, [Buffer.from('12345')]);
    const { blob_prefix } = (await platform.uploads.get('local', upload.id))!;
    await platform.db.query(`UPDATE uploads SET expires_at = now() - interval '1 second' WHERE upload_id = $1`, [upload.id]);
    const late = await sendParts(client, upload.id, [Buffer.from('67890')]).catch((err: unknown) => err);
    expect(late).toBeInstanceOf(OpenAI.ConflictError);
    expect((late as Error).message).toContain('is expired');
    await reconcile(platform);
    expect((await platform.uploads.get('local', upload.id))!.status).toBe('expired');
    expect(await blobsUnder(platform.dataDir, blob_prefix)).toEqual([]);
    expect(await platform.uploads.parts(upload.id)).toEqual([]);
  });
});

describe('an upload in parts (Python SDK)', () => {
  it('upload_file_chunked sends a file larger than one part, and the file reads back the same', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-uploads-'));
    const file = path.join(dir, 'train.jsonl');
    const bytes = Buffer.from(chatLines(300, 'py'));
    await fs.writeFile(file, bytes);
    const script = [
      'import json, os, sys',
      'from pathlib import Path',
      'from openai import OpenAI',
      'client = OpenAI()',
      'upload = client.uploads.upload_file_chunked(file=Path(sys.argv[1]), mime_type="application/jsonl", purpose="fine-tune", part_size=int(sys.argv[2]))',
      // cancel goes as a POST with an empty JSON body
      'dropped = client.uploads.create(bytes=10, filename="x.jsonl", mime_type="application/jsonl", purpose="fine-tune")',
      'print(json.dumps({"status": upload.status, "file": upload.file.id, "bytes": upload.file.bytes, "cancelled": client.uploads.cancel(dropped.id).status}))',
    ].join('\n');
    const partSize = Math.ceil(bytes.length / 4);
    const { stdout } = await promisify(execFile)(process.env.CORE_PYTHON ?? DEFAULT_CORE_PYTHON, ['-c', script, file, String(partSize)], {
      env: { ...process.env, OPENAI_BASE_URL: client.baseURL, OPENAI_API_KEY: 'unused' },
    });
    await fs.rm(dir, { recursive: true, force: true });
    const result = JSON.parse(stdout.trim().split('\n').pop()!) as { status: string; file: string; bytes: number; cancelled: string };
    expect(result).toMatchObject({ status: 'completed', bytes: bytes.length, cancelled: 'cancelled' });
    expect(Buffer.from(await (await client.files.content(result.file)).arrayBuffer()).equals(bytes)).toBe(true);
  }, 120_000);
});

describe('a process that stops between parts', () => {
  it('loses none of the parts it accepted: the next process completes the upload', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-uploads-restart-'));
    const config = loadConfig({ DATA_DIR: dataDir, PREPARE_GGUF_AFTER_TRAINING: 'false', LOG_LEVEL: 'warn' });
    const bytes = Buffer.from(chatLines(50, 'r'));
    const [first, second] = split(bytes, Math.ceil(bytes.length / 2));
    let before = await openPlatform(config);
    let opened = await listen(before);
    const upload = await opened.client.uploads.create({ bytes: bytes.length, filename: 'r.jsonl', mime_type: 'application/jsonl', purpose: 'fine-tune' });
    const ids = await sendParts(opened.client, upload.id, [first!]);
    await opened.app.close();
    await before.close();

    before = await openPlatform(config);
    opened = await listen(before);
    try {
      ids.push(...(await sendParts(opened.client, upload.id, [second!])));
      const completed = await opened.client.uploads.complete(upload.id, { part_ids: ids, md5: md5(bytes) });
      expect(Buffer.from(await (await opened.client.files.content(completed.file!.id)).arrayBuffer()).equals(bytes)).toBe(true);
    } finally {
      await opened.app.close();
      await before.close();
      await fs.rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
