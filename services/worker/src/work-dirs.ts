// A worker's local copies of a job (dataset splits, run folder with its checkpoints, model caches under
// DATA_DIR/work/<job_id>) are its own business: the API process that deletes a job cannot reach another machine's
// disk. So each worker, on its heartbeat, removes what it no longer needs of the jobs it is not working on: the
// whole folder of a job that is gone; the training files (splits, run folder, checkpoints, specs) of a job that is
// finished or running on another worker, keeping its models/ cache, which inference and exports of the job or of
// its checkpoints use. A queued job's folder stays: if this machine takes it again, a checkpoint newer than the
// stored one may be here. Workers on one machine may share DATA_DIR: each folder names the worker that last trained
// in it (OWNER), and a folder another live worker owns is that worker's business.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { JobStatus, Platform } from '@ftp/platform';

const JOB_FOLDER = /^job_[0-9a-f]+$/;
const OWNER = '.worker';
/** What the folder of a job that exists keeps: the local cache of its models. */
const KEPT = new Set(['models']);

type Row = { job_id: string; status: JobStatus; worker_id: string | null };

/** What of a job's folder goes: all of it, all but the model cache, or nothing (queued, or still this worker's). */
function toRemove(row: Row | undefined, workerId: string): 'all' | 'training files' | 'nothing' {
  if (!row) return 'all';
  if (row.status === 'queued' || ((row.status === 'preparing' || row.status === 'training') && row.worker_id === workerId)) return 'nothing';
  return 'training files';
}

/** Marks `folder` (a job's work folder) as this worker's, as it starts training there. */
export async function ownWorkDir(folder: string, workerId: string): Promise<void> {
  await fs.mkdir(folder, { recursive: true });
  await fs.writeFile(path.join(folder, OWNER), workerId);
}

/** Cleans DATA_DIR/work/<job_id> of every job not in `atWork`; returns the ids whose folders were touched. */
export async function sweepWorkDirs(platform: Platform, workerId: string, atWork: ReadonlySet<string>): Promise<string[]> {
  const root = path.join(platform.config.dataDir, 'work');
  const names = (await fs.readdir(root).catch(() => [] as string[])).filter((n) => JOB_FOLDER.test(n) && !atWork.has(n));
  if (names.length === 0) return [];
  const rows = await platform.db.query<Row>('SELECT job_id, status, worker_id FROM training_jobs WHERE job_id = ANY($1)', [names]);
  const byId = new Map(rows.map((r) => [r.job_id, r]));
  const others = new Set((await platform.workers.live(platform.config.WORKER_TIMEOUT_S)).map((w) => w.worker_id).filter((id) => id !== workerId));
  const swept: string[] = [];
  for (const name of names) {
    const folder = path.join(root, name);
    const row = byId.get(name);
    if (row && others.has(await fs.readFile(path.join(folder, OWNER), 'utf8').catch(() => ''))) continue;
    const what = toRemove(row, workerId);
    if (what === 'nothing') continue;
    const entries = what === 'all' ? [''] : (await fs.readdir(folder).catch(() => [] as string[])).filter((e) => !KEPT.has(e));
    if (entries.length === 0) continue;
    for (const entry of entries) await fs.rm(path.join(folder, entry), { recursive: true, force: true });
    swept.push(name);
  }
  return swept;
}
