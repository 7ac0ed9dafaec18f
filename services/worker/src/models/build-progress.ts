// Model builds on this worker (a download, a merge, a GGUF conversion: seconds to minutes, once) run one at a time per
// output, and say what they do while a person waits for them: when a build starts, every PROGRESS_INTERVAL_S while it
// runs (with the time so far; 5 s by default, #39) and when it ends. Each message goes once to the build's record (the log, the job's event
// log) and to every waiter's listener, also to one that joins a build already running (a chat that arrives while the
// worker converts the model after training): it is told what runs and since when, then the rest. A build that someone
// joins no longer runs at background priority (hurryBackgroundCores).

import { hurryBackgroundCores } from '@ftp/core-client';

/** Where a stage is, beside its sentence: what runs and for how long (null once it ended). */
export interface StageProgress {
  stage: string;
  elapsed_seconds: number;
}

/** Told each sentence about a build, as it happens. */
export type ProgressListener = (message: string, progress: StageProgress | null) => void;

export interface BuildStep {
  /** What the build does, for a person: "converting the adapter of job_… to a GGUF LoRA adapter". */
  what: string;
  /** Told each message once per build, whoever waits: the worker's log, the job's event log. */
  record?: ProgressListener;
  /** Between two "… s so far" (PROGRESS_INTERVAL_S). */
  heartbeatMs: number;
  /** What the build needs made first (a merge before a GGUF conversion), each with stages of its own: run before this
   *  stage starts, so its sentences do not interleave with this one's and its time is not counted in this one's. */
  before?: () => Promise<unknown>;
}

interface Build {
  run: Promise<string>;
  listeners: Set<ProgressListener>;
  /** Set once the build really runs (the output was missing), with when it started. */
  started?: { what: string; at: number };
}

const building = new Map<string, Build>();
const seconds = (since: number) => Math.round((Date.now() - since) / 1000);

/** Makes `target` with `build` unless `exists()`; one build per target at a time in this process (the second asker
 *  waits for the first). Returns `target`. */
export async function once(target: string, exists: () => Promise<boolean>, build: () => Promise<void>, step?: BuildStep, listener?: ProgressListener): Promise<string> {
  const pending = building.get(target);
  if (pending) {
    // Someone waits on a build already running, most often the model prepared after training at the lowest CPU
    // priority: the background cores run at normal priority from now on. At most one runs (one preparation at a time,
    // which joins no build while its core runs); a wait on another build raises it too, which costs only its niceness.
    void hurryBackgroundCores();
    if (listener) {
      pending.listeners.add(listener);
      if (pending.started) listener(`${pending.started.what}: running for ${seconds(pending.started.at)} s`, { stage: pending.started.what, elapsed_seconds: seconds(pending.started.at) });
    }
    return pending.run;
  }
  const entry: Build = { run: Promise.resolve(target), listeners: new Set(listener ? [listener] : []) };
  // A listener that fails (a request gone) must not fail the build others wait for.
  const tell = (message: string, progress: StageProgress | null) => {
    for (const l of [...(step?.record ? [step.record] : []), ...entry.listeners]) {
      try {
        l(message, progress);
      } catch {
        entry.listeners.delete(l);
      }
    }
  };
  entry.run = (async () => {
    if (await exists()) return target;
    if (!step) {
      await build();
      return target;
    }
    await step.before?.();
    entry.started = { what: step.what, at: Date.now() };
    await timedStage(step, tell, build, entry.started.at);
    return target;
  })().finally(() => building.delete(target));
  building.set(target, entry);
  return entry.run;
}

/** Runs one stage that a person may wait for, saying `step.what` when it starts, every heartbeat with the time so far,
 *  and when it ends or fails; `tell` hears each sentence with where the stage is (null once it ended). */
export async function timedStage<T>(step: BuildStep, tell: ProgressListener, run: () => Promise<T>, startedAt = Date.now()): Promise<T> {
  const at = () => ({ stage: step.what, elapsed_seconds: seconds(startedAt) });
  tell(`${step.what}…`, at());
  const heartbeat = setInterval(() => tell(`${step.what}: ${seconds(startedAt)} s so far`, at()), step.heartbeatMs);
  heartbeat.unref();
  try {
    const result = await run();
    tell(`${step.what}: done in ${seconds(startedAt)} s`, null);
    return result;
  } catch (err) {
    tell(`${step.what}: failed after ${seconds(startedAt)} s`, null);
    throw err;
  } finally {
    clearInterval(heartbeat);
  }
}
