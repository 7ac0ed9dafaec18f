// A running job told to end training early (a sweep's pruner stopped the trial): the core's StopWhenAsked callback
// watches a file in the job's folder (FTCORE_STOP_FILE), and training ends at the next step as if it were its last:
// the model is saved and evaluated, and the job completes. A file rather than a signal: torchrun's agent forwards only
// the signals that end a run, and every rank of a job sees the same file.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Platform } from '@ftp/platform';
import { jobWorkDir } from '../models/job-models.ts';

/** The file whose presence ends the job's training early; its text says why. */
export function stopFile(platform: Pick<Platform, 'config'>, jobId: string): string {
  return path.join(jobWorkDir(platform, jobId), 'stop-early');
}

/** Asks the job's core to end training at its next step (once; later calls leave the file as it is). */
export async function stopEarly(platform: Pick<Platform, 'config'>, jobId: string, reason: string): Promise<void> {
  const file = stopFile(platform, jobId);
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, reason, { flag: 'wx' }).catch((err: NodeJS.ErrnoException) => { if (err.code !== 'EEXIST') throw err; });
}
