// A worker's local copies of a job (dataset splits, run folder, model caches under DATA_DIR/work/<job_id>) are
// its own business: the API process that deletes a job cannot reach another machine's disk. So each worker
// deletes the folders of jobs that no longer exist, on its heartbeat.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Platform } from '@ftp/platform';

const JOB_FOLDER = /^job_[0-9a-f]+$/;

/** Removes DATA_DIR/work/<job_id> of every job without a row; returns the ids removed. */
export async function sweepWorkDirs(platform: Platform): Promise<string[]> {
  const root = path.join(platform.config.dataDir, 'work');
  const names = (await fs.readdir(root).catch(() => [] as string[])).filter((n) => JOB_FOLDER.test(n));
  if (names.length === 0) return [];
  const live = new Set((await platform.db.query<{ job_id: string }>('SELECT job_id FROM training_jobs WHERE job_id = ANY($1)', [names])).map((r) => r.job_id));
  const gone = names.filter((n) => !live.has(n));
  for (const name of gone) await fs.rm(path.join(root, name), { recursive: true, force: true });
  return gone;
}
