// A job's checkpoints in the blob store, so that the job can continue on any machine: each checkpoint the core
// reports is copied under the job's `checkpoints/` prefix (and the ones the core rotated away are deleted there),
// and a job that starts without a local checkpoint (another worker ran it before) gets the newest stored one. A
// worker can die in the middle of a copy, so a stored checkpoint counts only once its COMPLETE marker, written
// last, is there.
import path from 'node:path';
import fs from 'node:fs/promises';
import type { Platform, TrainingJobRow } from '@ftp/platform';
import { jobPrefixes } from '@ftp/jobs/models';
import { downloadPrefix, folderBytes, uploadFolder } from '../models/blob-folders.ts';

const stepOf = (name: string): number => Number(/^checkpoint-(\d+)$/.exec(name)?.[1] ?? NaN);
/** Written after every file of a stored checkpoint. */
const COMPLETE = '.complete';

async function localCheckpoints(folder: string): Promise<string[]> {
  const names = await fs.readdir(folder).catch(() => [] as string[]);
  return names.filter((n) => Number.isFinite(stepOf(n)));
}

interface TrainerState {
  epoch?: number;
  log_history?: Array<{ step?: number; loss?: number; eval_loss?: number }>;
}

/** What GET /jobs/{id}/checkpoints shows of a checkpoint, from the trainer state saved in it: its epoch, the last
 *  training loss logged up to its step, and the evaluation loss when it was evaluated at that step. */
async function describeCheckpoint(dir: string, step: number): Promise<{ epoch: number | null; train_loss: number | null; eval_loss: number | null }> {
  const state = JSON.parse(await fs.readFile(path.join(dir, 'trainer_state.json'), 'utf8').catch(() => '{}')) as TrainerState;
  const history = (state.log_history ?? []).filter((h) => (h.step ?? Infinity) <= step);
  const number = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  return {
    epoch: number(state.epoch),
    train_loss: number(history.findLast((h) => h.loss !== undefined)?.loss),
    eval_loss: number(history.findLast((h) => h.eval_loss !== undefined && h.step === step)?.eval_loss),
  };
}

/** Copies the checkpoint folder the core just saved into the store and records it; drops the stored ones (and
 *  their records) the core no longer keeps. A checkpoint the core rotated away before it could be copied (the
 *  worker's writes waited out an outage while training went on) is skipped: a newer one follows. */
export async function storeCheckpoint(platform: Platform, job: TrainingJobRow, checkpointDir: string): Promise<void> {
  const prefix = jobPrefixes(job).checkpoints;
  const name = path.basename(checkpointDir);
  let size: number;
  try {
    await uploadFolder(platform, checkpointDir, `${prefix}${name}`);
    size = await folderBytes(checkpointDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    platform.logger.info({ jobId: job.job_id, checkpoint: name }, 'checkpoint rotated away by the core before it was stored; skipped');
    return;
  }
  await platform.blobs.put(`${prefix}${name}/${COMPLETE}`, '');
  const step = stepOf(name);
  await platform.jobs.recordCheckpoint({ job_id: job.job_id, step, size_bytes: size, ...(await describeCheckpoint(checkpointDir, step)) });
  const kept = new Set(await localCheckpoints(path.dirname(checkpointDir)));
  for (const { name: stored } of await storedCheckpoints(platform, job)) {
    if (kept.has(stored)) continue;
    await platform.jobs.forgetCheckpoint(job.job_id, stepOf(stored));
    await platform.blobs.deletePrefix(`${prefix}${stored}/`);
  }
}

/** The local checkpoints the Trainer finished writing (its trainer_state.json, written last, is there). */
async function whole(folder: string, names: readonly string[]): Promise<string[]> {
  const written = await Promise.all(names.map((n) => fs.access(path.join(folder, n, 'trainer_state.json')).then(() => true, () => false)));
  return names.filter((_, i) => written[i]);
}

/** The stored checkpoints (checkpoint-<step>), oldest first, and whether each was stored whole. */
async function storedCheckpoints(platform: Platform, job: TrainingJobRow): Promise<Array<{ name: string; complete: boolean }>> {
  const prefix = jobPrefixes(job).checkpoints;
  const found = new Map<string, boolean>();
  for (const blob of await platform.blobs.list(prefix)) {
    const [name, file] = blob.key.slice(prefix.length).split('/') as [string, string | undefined];
    if (Number.isFinite(stepOf(name))) found.set(name, found.get(name) === true || file === COMPLETE);
  }
  return [...found].map(([name, complete]) => ({ name, complete })).sort((a, b) => stepOf(a.name) - stepOf(b.name));
}

/**
 * Makes `checkpointsDir` hold the newest checkpoint of the job, local or stored (a worker that ran the job
 * before on this machine left it here; one elsewhere left it in the store). Returns the step to resume from,
 * undefined when there is none.
 */
export async function restoreCheckpoint(platform: Platform, job: TrainingJobRow, checkpointsDir: string): Promise<number | undefined> {
  // A core killed while it saved (SIGKILL, the OOM killer: #56) leaves a checkpoint without the trainer state, which
  // the Trainer writes after the weights and the optimizer: removed, or the core would resume from its newest folder.
  const found = await localCheckpoints(checkpointsDir);
  const local = await whole(checkpointsDir, found);
  for (const partial of found.filter((n) => !local.includes(n))) await fs.rm(path.join(checkpointsDir, partial), { recursive: true, force: true });
  const newestLocal = Math.max(-1, ...local.map(stepOf));
  const newestStored = (await storedCheckpoints(platform, job)).filter((c) => c.complete).at(-1)?.name;
  if (newestStored && stepOf(newestStored) > newestLocal) {
    await downloadPrefix(platform, `${jobPrefixes(job).checkpoints}${newestStored}/`, path.join(checkpointsDir, newestStored));
    return stepOf(newestStored);
  }
  return newestLocal >= 0 ? newestLocal : undefined;
}
