// DELETE /datasets/{id} with what still needs the dataset (#54): a processed dataset a queued job trains on, or an
// evaluation waits for, is a 409 naming them unless cancel_jobs=true; an upload (ds_…) can be deleted too, keeping the
// processed datasets made from it, but not while one is still being made from it. No worker runs: a queued job stays
// queued and an evaluation stays waiting.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@ftp/platform';
import { evaluateQueue, type EvaluatePayload } from '@ftp/jobs/queues';
import { csv, startService, type TestService } from '../../../test/support/preprocessing.ts';

let svc: TestService;
beforeAll(async () => {
  svc = await startService({ AUTH_MODE: 'token' });
});
afterAll(() => svc.close());

/** A user of its own, with an upload and a dataset processed from it. */
async function userWithDataset(): Promise<{ userId: string; headers: Record<string, string>; uploadId: string; datasetId: string }> {
  const userId = `user-${randomUUID()}`;
  const headers = { authorization: `Bearer ${(await svc.platform.apiKeys.create(userId, 'test')).key}` };
  const upload = await svc.upload('qa.csv', csv([['q', 'a'], ['one', '1'], ['two', '2'], ['three', '3']]), { headers });
  const uploadId = upload.json().dataset_id as string;
  const processed = await svc.process({
    dataset_name: 'qa', dataset_id: uploadId,
    config: { field_mappings: { user_field: { type: 'column', value: 'q' }, assistant_field: { type: 'column', value: 'a' } } },
  }, headers);
  expect(processed.statusCode).toBe(200);
  return { userId, headers, uploadId, datasetId: processed.json().processed_dataset_id };
}

async function queuedJob(userId: string, processedDatasetId: string): Promise<string> {
  const jobId = newId('job');
  await svc.platform.jobs.insert({
    job_id: jobId, user_id: userId, job_name: 'waits', processed_dataset_id: processedDatasetId, base_model_id: 'tiny',
    modality: 'text', training_config: {}, blob_prefix: `jobs/${userId}/${jobId}/`, tracker_url: null,
  });
  return jobId;
}

describe('deleting a processed dataset something still needs', () => {
  it('is a 409 naming the queued job and the waiting evaluation; cancel_jobs=true cancels them and deletes it', async () => {
    const { userId, headers, uploadId, datasetId } = await userWithDataset();
    const jobId = await queuedJob(userId, datasetId);
    const request = { dataset_id: datasetId, model_source: 'base', base_model_id: 'tiny', use_fast_engine: false } as EvaluatePayload['request'];
    const evaluation = svc.platform.queue.request(evaluateQueue, { userId, request }).then(() => 'answered', (err: { statusCode?: number }) => err.statusCode);

    const refused = await svc.call({ method: 'DELETE', url: `/datasets/${datasetId}`, headers });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().detail).toContain(`training job ${jobId} (queued)`);
    expect(refused.json().detail).toContain('an evaluation waiting for a worker');
    expect(refused.json().detail).toContain(`POST /jobs/${jobId}/cancel`);
    expect(refused.json().detail).toContain('cancel_jobs=true');
    expect((await svc.call({ url: `/datasets/${datasetId}`, headers })).statusCode).toBe(200);
    expect((await svc.platform.jobs.get(userId, jobId))?.status).toBe('queued');

    const deleted = await svc.call({ method: 'DELETE', url: `/datasets/${datasetId}?cancel_jobs=true`, headers });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toMatchObject({ deleted: true, dataset_name: 'qa' });
    expect(deleted.json().message).toContain(`cancelled first: training job ${jobId} (queued)`);
    expect(deleted.json().kept_processed_datasets).toBeUndefined();
    // Cancelled as POST /jobs/{id}/cancel cancels; the evaluation's caller is told it was dropped.
    expect(await svc.platform.jobs.get(userId, jobId)).toMatchObject({ status: 'failed', error: 'cancelled by user', cancelled_at: expect.any(Date) });
    expect(await evaluation).toBe(503);
    expect((await svc.call({ url: `/datasets/${datasetId}`, headers })).statusCode).toBe(404);
    // Never the upload it was made from.
    expect((await svc.call({ url: '/datasets/uploads', headers })).json().uploads.map((u: { dataset_id: string }) => u.dataset_id)).toEqual([uploadId]);
  });

  it('a paused job needs it too; an ended one does not', async () => {
    const { userId, headers, datasetId } = await userWithDataset();
    const paused = await queuedJob(userId, datasetId);
    await svc.platform.jobs.update(paused, { status: 'paused' });
    const ended = await queuedJob(userId, datasetId);
    await svc.platform.jobs.update(ended, { status: 'completed' });
    const refused = await svc.call({ method: 'DELETE', url: `/datasets/${datasetId}`, headers });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().detail).toContain(`training job ${paused} (paused)`);
    expect(refused.json().detail).not.toContain(ended);
  });
});

describe('deleting an upload', () => {
  it('removes the file and its row, keeps the processed datasets made from it, and says which', async () => {
    const { headers, uploadId, datasetId } = await userWithDataset();
    const upload = (await svc.call({ url: '/datasets/uploads', headers })).json().uploads[0];
    const deleted = await svc.call({ method: 'DELETE', url: `/datasets/${uploadId}`, headers });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toMatchObject({
      dataset_name: 'qa.csv', deleted: true, deleted_files_count: 1,
      deleted_resources: [`raw_datasets/${uploadId}`, upload.cloud_path], kept_processed_datasets: [datasetId],
    });
    expect(await svc.platform.blobs.stat(svc.platform.blobs.keyFromUri(upload.cloud_path)!)).toBeUndefined();
    expect((await svc.call({ url: '/datasets/uploads', headers })).json().uploads).toEqual([]);
    // The processed dataset keeps its rows, read back whole.
    const kept = await svc.call({ url: `/datasets/${datasetId}`, headers });
    expect(kept.statusCode).toBe(200);
    expect(kept.json().splits[0].num_rows).toBe(3);
    const again = await svc.call({ method: 'DELETE', url: `/datasets/${uploadId}`, headers });
    expect(again.statusCode).toBe(404);
    expect(again.json().detail).toContain('GET /datasets/uploads');
  });

  it('is a 409 while a dataset is still being made from it; cancel_jobs=true fails that dataset and deletes the upload', async () => {
    const { userId, headers, uploadId } = await userWithDataset();
    const processingId = newId('pd');
    await svc.platform.datasets.insertProcessed({
      processed_dataset_id: processingId, user_id: userId, dataset_id: uploadId, dataset_name: 'augmenting', dataset_subset: 'default',
      dataset_source: 'upload', processing_mode: 'language_modeling', modality: 'text', config: {}, splits: [], num_examples: 0,
      columns: [], blob_prefix: `processed/${userId}/${processingId}/`, status: 'processing',
    });
    const refused = await svc.call({ method: 'DELETE', url: `/datasets/${uploadId}`, headers });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().detail).toContain(`processed dataset ${processingId}, still being made from it`);
    const deleted = await svc.call({ method: 'DELETE', url: `/datasets/${uploadId}?cancel_jobs=true`, headers });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json().kept_processed_datasets).toHaveLength(2);
    expect(await svc.platform.datasets.getProcessed(userId, processingId)).toMatchObject({ status: 'failed', error: expect.stringContaining('cancelled by user') });
  });
});
