// Sentences a job's `error` or an export's `message` carries, written once for every process that sets them.

export const CANCELLED_BY_USER = 'cancelled by user';

/** A job whose worker went silent (crash, kill, lost machine) and did not ask to be resumed. */
export function workerStopped(workerId: string | null): string {
  return `the worker ${workerId ?? '(unknown)'} stopped while this job was running (process exit, crash or lost machine); submit the job again, or set resume_on_restart to have it continue from its last checkpoint`;
}

/** A job a live worker stopped working on without finishing it (its handler ended while its writes failed, say). */
export function workerLetGo(workerId: string | null): string {
  return `the worker ${workerId ?? '(unknown)'} stopped working on this job without finishing it (its last writes failed, or it lost track of it); submit the job again, or set resume_on_restart to have it continue from its last checkpoint`;
}

/** An export to the hub whose sealed token expired (SECRET_TTL_S) or was dropped before a worker took it. */
export const HUB_TOKEN_LOST =
  'the hub token of this export is no longer available (it expired or its job ended); start the export again with hub_token';

/** Workers an evaluation may lose before it is failed instead of queued again (one that takes its worker down each
 *  time, say for memory, must not loop). */
export const MAX_EVALUATION_ATTEMPTS = 3;

/** An evaluation whose worker stopped on each of its attempts. */
export function evaluationLost(workerId: string | null, attempts: number): string {
  return `the worker ${workerId ?? '(unknown)'} stopped while this evaluation ran, and so did a worker on each of its ${attempts} attempts (process exit, crash, lost machine or memory); it is not queued again: create it again, with a lower limit or on a machine with more memory`;
}
