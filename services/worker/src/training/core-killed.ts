// A training core that dies of SIGKILL while its worker lives (#56: the kernel's OOM killer picks it first, as its
// oom_score_adj asks; a soak's kill of `ftcore train` failed the job even with resume_on_restart and a checkpoint
// stored). It is handled as a dead worker's job is: with resume_on_restart it goes back to the queue and continues
// from its last stored checkpoint (on this worker or another), its event saying why and from which step; killed the
// same way twice from the same checkpoint, it fails with the reason instead of looping.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { CoreResult } from '@ftp/core-client';
import type { JobEventRow } from '@ftp/platform';

export type CoreKillReason = 'oom_kill' | 'sigkill';

export class CoreKilled extends Error {
  constructor(readonly reason: CoreKillReason) {
    super(reason === 'oom_kill' ? 'the ML core was killed by the kernel for memory (cgroup oom_kill)' : 'the ML core was killed (SIGKILL)');
  }
}

/** How many processes of this worker's cgroup (and the cgroups below it) the kernel killed for memory: cgroup v2's
 *  `memory.events` `oom_kill`, which counts every kind of OOM kill. Null where the file cannot be read. */
export async function oomKills(): Promise<number | null> {
  try {
    const own = (await fs.readFile('/proc/self/cgroup', 'utf8')).split('\n').find((line) => line.startsWith('0::'));
    if (own === undefined) return null;
    const events = await fs.readFile(path.join('/sys/fs/cgroup', own.slice(3), 'memory.events'), 'utf8');
    const count = /^oom_kill (\d+)$/m.exec(events)?.[1];
    return count === undefined ? null : Number(count);
  } catch {
    return null;
  }
}

/** The core's death by SIGKILL, with its cause when the cgroup counted an OOM kill meanwhile; else undefined. */
export function coreKilled(result: CoreResult, oomBefore: number | null, oomAfter: number | null): CoreKilled | undefined {
  if (result.signal !== 'SIGKILL' || result.cancelled) return undefined;
  return new CoreKilled(oomBefore !== null && oomAfter !== null && oomAfter > oomBefore ? 'oom_kill' : 'sigkill');
}

/** What a re-queue after a core kill records in the job's event (`core_killed`), read when it dies again. */
export interface CoreKillRecord {
  reason: CoreKillReason;
  /** The step of the checkpoint it resumes from (0: none stored, it starts over). */
  from_step: number;
  /** The last step it reported before it died. */
  at_step: number;
}

/** Whether an earlier run of the job died the same way and resumed from the same checkpoint. */
export function diedThereBefore(history: readonly JobEventRow[], kill: Pick<CoreKillRecord, 'reason' | 'from_step'>): boolean {
  return history.some((event) => {
    const record = event.data['core_killed'] as CoreKillRecord | undefined;
    return event.kind === 'log' && record?.reason === kill.reason && record.from_step === kill.from_step;
  });
}

/** What to change when the kernel killed it for memory. */
export const MEMORY_FIX = 'lower batch_size or max_length, or train on a machine with more memory';
