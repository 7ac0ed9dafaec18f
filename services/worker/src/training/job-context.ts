// What a training or export processor gets from the worker that runs it.
import type { JobSecretValues, Platform } from '@ftp/platform';
import { CANCELLED_BY_USER, workerStopped } from '@ftp/jobs/queues';
import type { Machine } from './preflight.ts';

export interface JobContext {
  platform: Platform;
  workerId: string;
  /** Where this worker trains (host and training device): speed measurements are recorded under it. */
  machine: Machine;
  /** Processes each training job runs on: TRAIN_PROCESSES, or one per CUDA device of this worker. */
  trainProcesses: number;
  /** Opened from the sealed row when the work starts; dropped when it ends. */
  secrets?: JobSecretValues;
  /** Aborted when the user cancels (CANCELLED) or pauses (PAUSED), the worker stops (SHUTDOWN) or the job was taken
   *  from this worker (TAKEN); the core then checkpoints and stops. */
  signal: AbortSignal;
}

/** Abort reasons, as opposed to a user's cancel. */
export const SHUTDOWN = 'shutdown';
export const TAKEN = 'taken';
export const PAUSED = 'paused';

/** The sentence a job ends with when its core was stopped: the worker stopped, or the user cancelled it. */
export function stopReason(signal: AbortSignal, workerId: string): string {
  return signal.reason === SHUTDOWN ? workerStopped(workerId) : CANCELLED_BY_USER;
}
