// A batch cancelled because its input file was deleted (DELETE /v1/files/{id}?cancel_jobs=true, #54) ends cancelled
// when a worker takes it, not failed for a missing file. No line is answered, so no model is loaded.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { batchQueue } from '@ftp/jobs/queues';
import { deleteDataset, storeUpload } from '@ftp/datasets';
import { startWorker, type WorkerHandle } from '../src/index.ts';

let platform: TestPlatform;
let worker: WorkerHandle | undefined;

beforeAll(async () => {
  platform = await openTestPlatform();
});

afterAll(async () => {
  await worker?.stop();
  await platform?.close();
});

it('a batch whose input was deleted with cancel_jobs=true ends cancelled when a worker takes it', async () => {
  const userId = `user-${randomUUID()}`;
  const line = JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: { model: 'tiny', messages: [{ role: 'user', content: 'Hi' }] } });
  const file = await storeUpload(platform, userId, 'input.jsonl', Readable.from([Buffer.from(`${line}\n`)]), undefined, { lenient: true, purpose: 'batch' });
  const batch = await platform.batches.insert({
    batch_id: newId('batch'), user_id: userId, endpoint: '/v1/chat/completions', input_file_id: file.dataset_id,
    completion_window: '24h', metadata: null, expires_at: new Date(Date.now() + 3600_000),
  });
  await deleteDataset(platform, userId, { kind: 'upload', row: file }, { cancelJobs: true });
  expect(await platform.batches.get(userId, batch.batch_id)).toMatchObject({ status: 'cancelling' });

  worker = await startWorker(platform, { queues: ['batch'] });
  await platform.queue.add(batchQueue, { batchId: batch.batch_id });
  await expect.poll(async () => (await platform.batches.get(userId, batch.batch_id))?.status, { timeout: 30_000, interval: 50 }).toBe('cancelled');
  expect(await platform.batches.get(userId, batch.batch_id)).toMatchObject({ errors: null, output_file_id: null, worker_id: null, cancelled_at: expect.any(Date) });
});
