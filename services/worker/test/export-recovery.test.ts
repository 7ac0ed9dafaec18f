// Exports a stopped process left `running`: a sole worker's start queues cloud exports again (they finish)
// and fails hub exports, whose token was in the memory of the process that stopped. No ML needed: the
// job's adapter is a few stored files, and an adapter export only archives them.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId, type ExportRow } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { startWorker, type WorkerHandle } from '../src/index.ts';

let platform: TestPlatform;
let worker: WorkerHandle | undefined;

beforeAll(async () => {
  platform = await openTestPlatform();
});
afterAll(async () => {
  await worker?.stop();
  await platform.close();
});

async function waitFinished(exportId: string): Promise<ExportRow> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const row = (await platform.exports.getForWorker(exportId))!;
    if (row.status !== 'running') return row;
    if (Date.now() > deadline) throw new Error(`export ${exportId} still running: ${JSON.stringify(row)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

it('a sole worker queues orphaned cloud exports again and fails orphaned hub exports', async () => {
  const jobId = newId('job');
  const prefix = `jobs/local/${jobId}/`;
  await platform.jobs.insert({
    job_id: jobId, user_id: 'local', job_name: 'stored', processed_dataset_id: 'pd_x', base_model_id: 'tiny', modality: 'text',
    training_config: { method: 'LoRA', provider: 'local', base_model_id: 'tiny' }, blob_prefix: prefix, tracker_url: null,
  });
  await platform.blobs.put(`${prefix}adapter/adapter_config.json`, '{"r": 4}');
  await platform.blobs.put(`${prefix}adapter/adapter_model.safetensors`, Buffer.alloc(64, 7));
  const adapterUri = platform.blobs.uri(`${prefix}adapter`);
  await platform.jobs.update(jobId, { status: 'completed', adapter_path: adapterUri, artifacts: { file: {}, raw: { adapter: adapterUri }, hub: {} } });

  // What a process that died mid-export leaves: rows still running, one claimed by a worker long gone.
  const base = { job_id: jobId, user_id: 'local', type: 'adapter' as const, gguf_quantization: null, message: 'queued' };
  const cloud = newId('exp');
  const toHub = newId('exp');
  await platform.exports.insert({ ...base, export_id: cloud, destination: ['cloud'], hub_repo_id: null });
  await platform.exports.update(cloud, { worker_id: 'wrk_gone', message: 'exporting' });
  await platform.exports.insert({ ...base, export_id: toHub, destination: ['hub'], hub_repo_id: 'local/tiny' });

  worker = await startWorker(platform, { sole: true });

  const hubRow = await waitFinished(toHub);
  expect(hubRow.status).toBe('failed');
  expect(hubRow.message).toBe('the worker stopped before this export finished, and the hub token (kept in memory only) was lost with it; start the export again with hub_token');
  expect(hubRow.finished_at).not.toBeNull();

  const cloudRow = await waitFinished(cloud);
  expect(cloudRow.status, cloudRow.message ?? '').toBe('completed');
  const archive = platform.blobs.uri(`${prefix}exports/adapter.tar.gz`);
  expect(cloudRow.artifacts).toEqual([
    { type: 'adapter', variant: 'raw', path: adapterUri },
    { type: 'adapter', variant: 'file', path: archive },
  ]);
  expect((await platform.jobs.getForWorker(jobId))!.artifacts.file.adapter).toBe(archive);
  expect(platform.logText()).toContain('export queued again: its worker stopped');
});
