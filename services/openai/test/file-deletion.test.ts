// DELETE /v1/files/{id} of a batch's input while the batch has not ended (#54): a 409 in OpenAI's error shape naming the
// batch, unless cancel_jobs=true, which cancels the batch as POST /v1/batches/{id}/cancel does and deletes the file.
// No worker runs: a batch stays as the test sets it.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { multipartBody } from '../../../test/support/preprocessing.ts';
import { openAiTestApp, uploadFineTuneFile, type OpenAiTestApp } from './support.ts';

let opened: OpenAiTestApp;
let modelsDir: string;

beforeAll(async () => {
  modelsDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-models-'));
  opened = await openAiTestApp(modelsDir);
});

afterAll(async () => {
  await opened?.close();
  await fs.rm(modelsDir, { recursive: true, force: true });
});

async function batchFile(): Promise<string> {
  const line = JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: { model: 'tiny', messages: [{ role: 'user', content: 'Hi' }] } });
  const { body, contentType } = multipartBody('input.jsonl', `${line}\n`, 'file', { fields: { purpose: 'batch' } });
  const res = await opened.app.inject({ method: 'POST', url: '/v1/files', payload: body, headers: { 'content-type': contentType } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().id;
}

describe('deleting a batch’s input file', () => {
  it('is a 409 naming the batch in progress; cancel_jobs=true cancels the batch and deletes the file', async () => {
    const { app, platform } = opened;
    const fileId = await batchFile();
    const created = await app.inject({ method: 'POST', url: '/v1/batches', payload: { input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' } });
    expect(created.statusCode, created.body).toBe(200);
    const batchId = created.json().id as string;
    await platform.db.query("UPDATE batches SET status = 'in_progress', in_progress_at = now(), total = 1 WHERE batch_id = $1", [batchId]);

    const refused = await app.inject({ method: 'DELETE', url: `/v1/files/${fileId}` });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({ type: 'invalid_request_error', code: 'conflict', message: expect.stringContaining(`batch ${batchId} (in_progress), which reads it as its input`) });
    expect(refused.json().error.message).toContain(`POST /v1/batches/${batchId}/cancel`);
    expect((await app.inject({ url: `/v1/files/${fileId}` })).statusCode).toBe(200);

    const deleted = await app.inject({ method: 'DELETE', url: `/v1/files/${fileId}?cancel_jobs=true` });
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(deleted.json()).toEqual({ id: fileId, object: 'file', deleted: true });
    expect((await app.inject({ url: `/v1/batches/${batchId}` })).json()).toMatchObject({ status: 'cancelling' });
    expect((await app.inject({ url: `/v1/files/${fileId}` })).statusCode).toBe(404);
  });

  it('a fine-tuning file no batch reads is deleted at once', async () => {
    const file = await uploadFineTuneFile(opened.app, 'train.jsonl', `${JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello' }] })}\n`);
    const id = file.json().id as string;
    expect((await opened.app.inject({ method: 'DELETE', url: `/v1/files/${id}` })).json()).toEqual({ id, object: 'file', deleted: true });
  });
});
