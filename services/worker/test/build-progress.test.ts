// A model build says what it does while people wait for it: its record (the log, the job's events) hears each message
// once, every waiter hears them too, and a waiter that joins a build already running is told what runs and since when.
import { describe, expect, it } from 'vitest';
import { once } from '../src/models/build-progress.ts';

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (err: Error) => void } {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('once with a build step', () => {
  it('tells the record once and each waiter, also one that joins while it runs; one build for both', async () => {
    const record: string[] = [];
    const first: string[] = [];
    const joined: string[] = [];
    const gate = deferred();
    let builds = 0;
    const step = { what: 'converting the adapter', record: (m: string) => record.push(m), heartbeatMs: 5_000 };
    const build = async () => {
      builds += 1;
      await gate.promise;
    };
    const a = once('/tmp/target-a', async () => false, build, step, (m) => first.push(m));
    await new Promise((r) => setTimeout(r, 10));
    const b = once('/tmp/target-a', async () => false, build, step, (m) => joined.push(m));
    gate.resolve();
    expect(await Promise.all([a, b])).toEqual(['/tmp/target-a', '/tmp/target-a']);
    expect(builds).toBe(1);
    expect(record).toEqual(['converting the adapter…', 'converting the adapter: done in 0 s']);
    expect(first).toEqual(record);
    expect(joined).toEqual(['converting the adapter: running for 0 s', 'converting the adapter: done in 0 s']);
  });

  it('says nothing when the output exists, and says a failure', async () => {
    const heard: string[] = [];
    await once('/tmp/target-b', async () => true, async () => { throw new Error('not called'); }, { what: 'merging', heartbeatMs: 5_000 }, (m) => heard.push(m));
    expect(heard).toEqual([]);
    const failing = once('/tmp/target-c', async () => false, async () => { throw new Error('the core failed'); }, { what: 'merging', heartbeatMs: 5_000 }, (m) => heard.push(m));
    await expect(failing).rejects.toThrow('the core failed');
    expect(heard).toEqual(['merging…', 'merging: failed after 0 s']);
  });

  it('keeps building for the others when a waiter\'s listener fails (its request is gone)', async () => {
    const record: string[] = [];
    const result = await once('/tmp/target-d', async () => false, async () => undefined, { what: 'copying', record: (m) => record.push(m), heartbeatMs: 5_000 }, () => {
      throw new Error('the request is gone');
    });
    expect(result).toBe('/tmp/target-d');
    expect(record).toEqual(['copying…', 'copying: done in 0 s']);
  });

  it('makes what a build needs before its own stage starts: one stage after the other, never interleaved, each timed alone (#54)', async () => {
    const heard: string[] = [];
    const listen = (message: string) => heard.push(message);
    const gate = deferred();
    let merged = false;
    const merge = () => once('/tmp/target-merged', async () => merged, async () => { await gate.promise; merged = true; }, { what: 'merging', heartbeatMs: 1_000 }, listen);
    const gguf = once('/tmp/target-gguf', async () => false, async () => { await merge(); }, { what: 'making the GGUF', heartbeatMs: 1_000, before: merge }, listen);
    // the merge's heartbeats while the GGUF stage has not started: none of the GGUF's
    while (heard.filter((m) => m.endsWith('s so far')).length < 2) await new Promise((r) => setTimeout(r, 100));
    gate.resolve();
    await gguf;
    const firstGguf = heard.findIndex((m) => m.startsWith('making the GGUF'));
    expect(heard.slice(0, firstGguf).every((m) => m.startsWith('merging'))).toBe(true);
    expect(heard.slice(firstGguf)).toEqual(['making the GGUF…', 'making the GGUF: done in 0 s']);
  });

  it('while a build runs, says every heartbeat how long it has run, with the stage beside each sentence (#39)', async () => {
    const heard: { message: string; progress: { stage: string; elapsed_seconds: number } | null }[] = [];
    const gate = deferred();
    const running = once('/tmp/target-e', async () => false, () => gate.promise, { what: 'making the GGUF', heartbeatMs: 1_000 }, (message, progress) => {
      heard.push({ message, progress });
      if (heard.filter((h) => h.message.endsWith('s so far')).length === 3) gate.resolve();
    });
    await running;
    const beats = heard.filter((h) => h.message.endsWith('s so far'));
    expect(beats.map((b) => b.progress?.stage)).toEqual(['making the GGUF', 'making the GGUF', 'making the GGUF']);
    const elapsed = beats.map((b) => b.progress!.elapsed_seconds);
    expect(elapsed[2]!).toBeGreaterThan(elapsed[0]!);
    expect(heard.at(-1)).toEqual({ message: expect.stringMatching(/^making the GGUF: done in \d+ s$/), progress: null });
  });
});
