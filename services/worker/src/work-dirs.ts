// A worker's local copies of a job (dataset splits, run folder with its checkpoints, model caches under
// DATA_DIR/work/<job_id>) are its own business: the API process that deletes a job cannot reach another machine's
// disk. So each worker, on its heartbeat, removes what it no longer needs of the jobs it is not working on: the
// whole folder of a job that is gone; the training files (splits, run folder, checkpoints, specs) of a job that is
// finished or running on another worker, keeping its models/ cache, which inference and exports of the job or of
// its checkpoints use. A queued job's folder stays: if this machine takes it again, a checkpoint newer than the
// stored one may be here. Workers on one machine may share DATA_DIR: each folder names the worker that last trained
// in it (OWNER), and a folder another live worker owns is that worker's business. An evaluation's folder
// (DATA_DIR/work/<evaluation_id>: its specs and results files) is scratch its worker removes when it ends; one a worker
// left behind when it died goes here, unless the evaluation runs on another live worker. So does a Tinker run's hold
// folder (DATA_DIR/work/tinker/<run id>-<hold>) unless a live worker holds the run, and the cache of a run's saved
// weights (DATA_DIR/cache/tinker/<run id>) once the run is deleted.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { JobStatus, Platform } from '@ftp/platform';

const JOB_FOLDER = /^job_[0-9a-f]+$/;
const EVALUATION_FOLDER = /^evalrun_[0-9a-f]+$/;
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
  const folders = (await fs.readdir(root).catch(() => [] as string[])).filter((n) => !atWork.has(n));
  const names = folders.filter((n) => JOB_FOLDER.test(n));
  const evaluations = folders.filter((n) => EVALUATION_FOLDER.test(n));
  const rows = names.length === 0 ? [] : await platform.db.query<Row>('SELECT job_id, status, worker_id FROM training_jobs WHERE job_id = ANY($1)', [names]);
  const byId = new Map(rows.map((r) => [r.job_id, r]));
  const others = new Set((await platform.workers.live(platform.config.WORKER_TIMEOUT_S)).map((w) => w.worker_id).filter((id) => id !== workerId));
  const swept = await sweepEvaluationFolders(platform, root, evaluations, others);
  swept.push(...(await sweepTinkerFolders(platform, new Set([...others, workerId]))));
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

/** Removes the folders of evaluations no live worker but this one runs (this one's at work were left out). */
async function sweepEvaluationFolders(platform: Platform, root: string, names: string[], others: ReadonlySet<string>): Promise<string[]> {
  if (names.length === 0) return [];
  const running = await platform.db.query<{ evaluation_id: string; worker_id: string | null }>(
    "SELECT evaluation_id, worker_id FROM evaluation_runs WHERE evaluation_id = ANY($1) AND status = 'running'",
    [names],
  );
  const elsewhere = new Set(running.filter((r) => r.worker_id !== null && others.has(r.worker_id)).map((r) => r.evaluation_id));
  const gone = names.filter((name) => !elsewhere.has(name));
  for (const name of gone) await fs.rm(path.join(root, name), { recursive: true, force: true });
  return gone;
}

const TINKER_HOLD = /^(job_[0-9a-f]+)-[0-9a-f]+$/;

/** Removes the hold folders of Tinker runs no live worker (`live`, this one included) holds, and the weights caches of
 *  runs that no longer exist; returns them as `tinker/<folder>`. A hold removes its own folder as it ends: what is
 *  here besides is a dead worker's (or a dead core's) leftover. */
async function sweepTinkerFolders(platform: Platform, live: ReadonlySet<string>): Promise<string[]> {
  const holds = path.join(platform.config.dataDir, 'work', 'tinker');
  const caches = path.join(platform.config.dataDir, 'cache', 'tinker');
  const [held, cached] = await Promise.all([holds, caches].map((dir) => fs.readdir(dir).catch(() => [] as string[])));
  const ids = [...new Set([...held!.flatMap((n) => TINKER_HOLD.exec(n)?.[1] ?? []), ...cached!])];
  if (ids.length === 0) return [];
  const runs = await platform.db.query<{ run_id: string; status: string; worker_id: string | null }>(
    'SELECT run_id, status, worker_id FROM tinker_runs WHERE run_id = ANY($1)', [ids]);
  const byId = new Map(runs.map((r) => [r.run_id, r]));
  const gone = [
    ...held!.filter((name) => {
      const run = byId.get(TINKER_HOLD.exec(name)?.[1] ?? '');
      return TINKER_HOLD.test(name) && !(run?.status === 'running' && run.worker_id !== null && live.has(run.worker_id));
    }).map((name) => path.join(holds, name)),
    ...cached!.filter((name) => !byId.has(name)).map((name) => path.join(caches, name)),
  ];
  for (const folder of gone) await fs.rm(folder, { recursive: true, force: true });
  return gone.map((folder) => `tinker/${path.basename(folder)}`);
}
