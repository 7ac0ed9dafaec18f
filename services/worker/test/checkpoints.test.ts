// Checkpoints in the blob store: a job continues on another machine from the newest checkpoint stored whole; one
// whose copy was cut short (its worker died mid-upload: no COMPLETE marker) is never restored, and stored
// checkpoints the core rotated away are deleted. No ML: checkpoints are a few small files.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { restoreCheckpoint, storeCheckpoint } from '../src/training/checkpoints.ts';

let platform: TestPlatform;
let scratch: string;
beforeAll(async () => {
  platform = await openTestPlatform();
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-ckpt-'));
});
afterAll(async () => {
  await platform.close();
  await fs.rm(scratch, { recursive: true, force: true });
});

async function checkpoint(dir: string, step: number): Promise<string> {
  const folder = path.join(dir, `checkpoint-${step}`);
  await fs.mkdir(folder, { recursive: true });
  // What the trainer logs: a loss every 5 steps, an evaluation every 20.
  const history = Array.from({ length: step / 5 }, (_, i) => ({ step: 5 * (i + 1), loss: 2 - 0.01 * (i + 1) }));
  if (step % 20 === 0) history.push({ step, eval_loss: 1.5 } as never);
  await fs.writeFile(path.join(folder, 'trainer_state.json'), JSON.stringify({ global_step: step, epoch: step / 10, log_history: history }));
  await fs.writeFile(path.join(folder, 'adapter_model.safetensors'), Buffer.alloc(32, step));
  return folder;
}

it('restores the newest checkpoint stored whole, skips one cut short, and mirrors rotation', async () => {
  const jobId = newId('job');
  const job = await platform.jobs.insert({
    job_id: jobId, user_id: 'local', job_name: 'ckpt', processed_dataset_id: 'pd_x', base_model_id: 'tiny', modality: 'text',
    training_config: {}, blob_prefix: `jobs/local/${jobId}/`, tracker_url: null,
  });
  const machineA = path.join(scratch, 'a', 'checkpoints');
  await storeCheckpoint(platform, job, await checkpoint(machineA, 10));
  await storeCheckpoint(platform, job, await checkpoint(machineA, 20));
  // Machine A died while copying checkpoint-30: some of its files are stored, not its marker.
  await platform.blobs.put(`${job.blob_prefix}checkpoints/checkpoint-30/adapter_model.safetensors`, Buffer.alloc(32, 30));

  const machineB = path.join(scratch, 'b', 'checkpoints');
  expect(await restoreCheckpoint(platform, job, machineB)).toBe(20);
  expect(await fs.readdir(machineB)).toEqual(['checkpoint-20']);
  expect(JSON.parse(await fs.readFile(path.join(machineB, 'checkpoint-20', 'trainer_state.json'), 'utf8'))).toMatchObject({ global_step: 20 });

  // The core on B keeps two (save_total_limit): checkpoint-10 and the cut-short 30 go from the store too.
  await fs.rm(path.join(machineA), { recursive: true, force: true });
  await storeCheckpoint(platform, job, await checkpoint(machineB, 40));
  const stored = new Set((await platform.blobs.list(`${job.blob_prefix}checkpoints/`)).map((b) => b.key.split('/').at(-2)));
  expect([...stored].sort()).toEqual(['checkpoint-20', 'checkpoint-40']);
  // …and so do their records: step, epoch, the last loss up to the step, the eval loss when evaluated there.
  const records = await platform.jobs.checkpoints(job.job_id);
  expect(records.map(({ step, epoch, train_loss, eval_loss }) => ({ step, epoch, train_loss, eval_loss }))).toEqual([
    { step: 20, epoch: 2, train_loss: 1.96, eval_loss: 1.5 },
    { step: 40, epoch: 4, train_loss: 1.92, eval_loss: 1.5 },
  ]);
  expect(records.every((r) => r.size_bytes > 64)).toBe(true);

  // A machine that has a newer one itself keeps it.
  expect(await restoreCheckpoint(platform, job, machineB)).toBe(40);
  expect((await fs.readdir(machineB)).sort()).toEqual(['checkpoint-20', 'checkpoint-40']);
  // A job with nothing anywhere starts over.
  expect(await restoreCheckpoint(platform, { ...job, blob_prefix: 'jobs/local/none/' }, path.join(scratch, 'c'))).toBeUndefined();
});
