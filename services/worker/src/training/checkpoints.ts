// A job's checkpoints in the blob store, so that the job can continue on any machine: each checkpoint the core
// reports is copied under the job's `checkpoints/` prefix (and the ones the core rotated away are deleted there),
// and a job that starts without a local checkpoint (another worker ran it before) gets the newest stored one.
import path from 'node:path';
import fs from 'node:fs/promises';
import type { Platform, TrainingJobRow } from '@ftp/platform';
import { jobPrefixes } from '@ftp/jobs';
import { downloadPrefix, uploadFolder } from '../models/blob-folders.ts';

const stepOf = (name: string): number => Number(/^checkpoint-(\d+)$/.exec(name)?.[1] ?? NaN);

async function localCheckpoints(folder: string): Promise<string[]> {
  const names = await fs.readdir(folder).catch(() => [] as string[]);
  return names.filter((n) => Number.isFinite(stepOf(n)));
}

/** Copies the checkpoint folder the core just saved into the store, and drops stored ones it no longer keeps. */
export async function storeCheckpoint(platform: Platform, job: TrainingJobRow, checkpointDir: string): Promise<void> {
  const prefix = jobPrefixes(job).checkpoints;
  const name = path.basename(checkpointDir);
  await uploadFolder(platform, checkpointDir, `${prefix}${name}`);
  const kept = new Set(await localCheckpoints(path.dirname(checkpointDir)));
  for (const stored of await storedCheckpoints(platform, job)) {
    if (!kept.has(stored)) await platform.blobs.deletePrefix(`${prefix}${stored}/`);
  }
}

/** Names of the stored checkpoints (checkpoint-<step>), oldest first. */
export async function storedCheckpoints(platform: Platform, job: TrainingJobRow): Promise<string[]> {
  const prefix = jobPrefixes(job).checkpoints;
  const names = new Set((await platform.blobs.list(prefix)).map((b) => b.key.slice(prefix.length).split('/')[0]!));
  return [...names].filter((n) => Number.isFinite(stepOf(n))).sort((a, b) => stepOf(a) - stepOf(b));
}

/**
 * Makes `checkpointsDir` hold the newest checkpoint of the job, local or stored (a worker that ran the job
 * before on this machine left it here; one elsewhere left it in the store). Returns whether there is one to
 * resume from.
 */
export async function restoreCheckpoint(platform: Platform, job: TrainingJobRow, checkpointsDir: string): Promise<boolean> {
  const local = await localCheckpoints(checkpointsDir);
  const newestLocal = Math.max(-1, ...local.map(stepOf));
  const stored = await storedCheckpoints(platform, job);
  const newestStored = stored.at(-1);
  if (newestStored && stepOf(newestStored) > newestLocal) {
    await downloadPrefix(platform, `${jobPrefixes(job).checkpoints}${newestStored}/`, path.join(checkpointsDir, newestStored));
    return true;
  }
  return newestLocal >= 0;
}
