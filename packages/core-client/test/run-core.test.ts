// A core nobody waits on runs at the lowest CPU priority, its threads and children too: scaled out, the GGUF a worker
// prepares after training held its next job in preparing for two minutes (#39). Linux's nice value is per thread; a
// core niced at its start makes every thread and process it starts at that value.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BACKGROUND_PRIORITY, hurryBackgroundCores, runCore } from '../src/run-core.ts';

/** The nice values of every thread of `pid` (field 19 of each /proc/<pid>/task/<tid>/stat). */
async function threadNiceness(pid: number): Promise<number[]> {
  const tids = await fs.readdir(`/proc/${pid}/task`);
  return Promise.all(tids.map(async (tid) => Number((await fs.readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8')).split(') ')[1]!.split(' ')[16])));
}

/** Starts a core that holds for 30 s in its gguf step; `look` gets its pid once it has started a thread of its own. */
async function withHeldCore(background: boolean, look: (pid: number) => Promise<void>): Promise<void> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-run-core-'));
  const controller = new AbortController();
  // The hold keeps the command alive long enough to look at it; cancelled during it, nothing is converted.
  const running = runCore({ command: 'gguf', spec: { model: dir, output_file: path.join(dir, 'model.gguf') }, specFile: path.join(dir, 'spec.json'), env: { FTCORE_TEST_HOLD: 'gguf=30' }, signal: controller.signal, cancelGraceMs: 5000, ...(background ? { background } : {}) });
  try {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const pids = (await fs.readdir('/proc')).filter((p) => /^\d+$/.test(p));
      const core = await Promise.all(pids.map(async (p) => ((await fs.readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '')).includes(path.join(dir, 'spec.json')) ? Number(p) : null)));
      const pid = core.find((p) => p !== null);
      // Looked at once the core has started a thread of its own (its heartbeat's), which must have inherited it.
      if (pid && ((await threadNiceness(pid)).length >= 2 || Date.now() > deadline)) {
        await look(pid);
        break;
      }
      if (Date.now() > deadline) throw new Error('the core did not start within 20 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    controller.abort();
    await running;
    await fs.rm(dir, { recursive: true, force: true });
  }
}

describe('runCore', () => {
  it.each([[true, BACKGROUND_PRIORITY], [false, os.getPriority()]])('with background %s runs the core at nice %i, every thread of it', async (background, nice) => {
    let seen: number[] = [];
    await withHeldCore(background, async (pid) => {
      seen = await threadNiceness(pid);
    });
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(new Set(seen)).toEqual(new Set([nice]));
  }, 60_000);

  // A chat that joins the model prepared after training waits on that core: at nice 19 on busy CPUs it had no answer
  // in 300 s (CI). Raising a priority takes privilege (root, CAP_SYS_NICE, RLIMIT_NICE): where this process has none,
  // the core is left as it was, and that is what is checked.
  it('brings a background core, every thread of it, to normal priority once someone waits on it', async () => {
    const normal = os.getPriority();
    let privileged = true;
    try {
      os.setPriority(normal - 1);
      os.setPriority(normal);
    } catch {
      privileged = false;
    }
    let before: number[] = [];
    let after: number[] = [];
    let raised = -1;
    await withHeldCore(true, async (pid) => {
      before = await threadNiceness(pid);
      raised = await hurryBackgroundCores();
      after = await threadNiceness(pid);
    });
    expect(new Set(before)).toEqual(new Set([BACKGROUND_PRIORITY]));
    expect(new Set(after)).toEqual(new Set([privileged ? normal : BACKGROUND_PRIORITY]));
    expect(raised).toBe(privileged ? after.length : 0);
    // Raised once: a second call finds nothing left to raise.
    expect(await hurryBackgroundCores()).toBe(0);
  }, 60_000);
});
