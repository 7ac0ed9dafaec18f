// Model builds on this worker (a download, a merge, a GGUF conversion: seconds to minutes, once) run one at a time per
// output, and say what they do while a person waits for them: when a build starts, every HEARTBEAT_MS while it runs
// (with the time so far) and when it ends. Each message goes once to the build's record (the log, the job's event
// log) and to every waiter's listener, also to one that joins a build already running (a chat that arrives while the
// worker converts the model after training): it is told what runs and since when, then the rest.

/** Told each sentence about a build, as it happens. */
export type ProgressListener = (message: string) => void;

export interface BuildStep {
  /** What the build does, for a person: "converting the adapter of job_… to a GGUF LoRA adapter". */
  what: string;
  /** Told each message once per build, whoever waits: the worker's log, the job's event log. */
  record?: ProgressListener;
}

const HEARTBEAT_MS = 15_000;

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
    if (listener) {
      pending.listeners.add(listener);
      if (pending.started) listener(`${pending.started.what}: running for ${seconds(pending.started.at)} s`);
    }
    return pending.run;
  }
  const entry: Build = { run: Promise.resolve(target), listeners: new Set(listener ? [listener] : []) };
  // A listener that fails (a request gone) must not fail the build others wait for.
  const tell = (message: string) => {
    for (const l of [...(step?.record ? [step.record] : []), ...entry.listeners]) {
      try {
        l(message);
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
    entry.started = { what: step.what, at: Date.now() };
    tell(`${step.what}…`);
    const heartbeat = setInterval(() => tell(`${step.what}: ${seconds(entry.started!.at)} s so far`), HEARTBEAT_MS);
    heartbeat.unref();
    try {
      await build();
      tell(`${step.what}: done in ${seconds(entry.started.at)} s`);
    } catch (err) {
      tell(`${step.what}: failed after ${seconds(entry.started.at)} s`);
      throw err;
    } finally {
      clearInterval(heartbeat);
    }
    return target;
  })().finally(() => building.delete(target));
  building.set(target, entry);
  return entry.run;
}
