// A core nobody waits on runs at the lowest CPU priority, its threads and children too: scaled out, the GGUF a worker
// prepares after training held its next job in preparing for two minutes (#39). Linux's nice value is per thread; a
// core niced at its start makes every thread and process it starts at that value.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BACKGROUND_PRIORITY, runCore } from '../src/run-core.ts';

/** The nice values of every thread of `pid` (field 19 of each /proc/<pid>/task/<tid>/stat). */
async function threadNiceness(pid: number): Promise<number[]> {
  const tids = await fs.readdir(`/proc/${pid}/task`);
  return Promise.all(tids.map(async (tid) => Number((await fs.readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8')).split(') ')[1]!.split(' ')[16])));
}

describe('runCore', () => {
  it.each([[true, BACKGROUND_PRIORITY], [false, os.getPriority()]])('with background %s runs the core at nice %i, every thread of it', async (background, nice) => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-run-core-'));
    const controller = new AbortController();
    let seen: number[] = [];
    // The hold keeps the command alive long enough to look at it; cancelled during it, nothing is converted.
    const running = runCore({ command: 'gguf', spec: { model: dir, output_file: path.join(dir, 'model.gguf') }, specFile: path.join(dir, 'spec.json'), env: { FTCORE_TEST_HOLD: 'gguf=30' }, signal: controller.signal, cancelGraceMs: 5000, ...(background ? { background } : {}) });
    try {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const pids = (await fs.readdir('/proc')).filter((p) => /^\d+$/.test(p));
        const core = await Promise.all(pids.map(async (p) => ((await fs.readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '')).includes(path.join(dir, 'spec.json')) ? Number(p) : null)));
        const pid = core.find((p) => p !== null);
        if (pid) seen = await threadNiceness(pid);
        // Looked at once the core has started a thread of its own (its heartbeat's), which must have inherited it.
        if (seen.length >= 2 || Date.now() > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      controller.abort();
      await running;
      await fs.rm(dir, { recursive: true, force: true });
    }
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(new Set(seen)).toEqual(new Set([nice]));
  }, 60_000);
});
