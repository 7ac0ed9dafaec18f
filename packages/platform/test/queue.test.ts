// In-process queue: FIFO order, concurrency limit, payload validation, removal of waiting work.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineQueue, InProcessQueue } from '@ftp/platform';

const jobs = defineQueue('test-jobs', z.object({ jobId: z.string() }));

describe('InProcessQueue', () => {
  it('runs jobs in order, one at a time by default, and waits for them on close', async () => {
    const queue = new InProcessQueue();
    const seen: string[] = [];
    let running = 0;
    let maxRunning = 0;
    for (const id of ['a', 'b', 'c']) await queue.add(jobs, { jobId: id });
    queue.process(jobs, async ({ jobId }) => {
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      await new Promise((r) => setTimeout(r, 5));
      seen.push(jobId);
      running -= 1;
    });
    await queue.add(jobs, { jobId: 'd' });
    await new Promise((r) => setTimeout(r, 60));
    await queue.close();
    expect(seen).toEqual(['a', 'b', 'c', 'd']);
    expect(maxRunning).toBe(1);
  });

  it('honours the concurrency setting', async () => {
    const queue = new InProcessQueue();
    let running = 0;
    let maxRunning = 0;
    queue.process(jobs, async () => {
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      await new Promise((r) => setTimeout(r, 20));
      running -= 1;
    }, { concurrency: 2 });
    for (const id of ['a', 'b', 'c', 'd']) await queue.add(jobs, { jobId: id });
    await new Promise((r) => setTimeout(r, 100));
    await queue.close();
    expect(maxRunning).toBe(2);
  });

  it('rejects a payload that does not match the queue schema', async () => {
    const queue = new InProcessQueue();
    await expect(queue.add(jobs, { jobId: 7 } as unknown as { jobId: string })).rejects.toThrow();
  });

  it('removes waiting work and keeps a failing handler from stopping the lane', async () => {
    const errors: unknown[] = [];
    const queue = new InProcessQueue((_q, err) => errors.push(err));
    for (const id of ['a', 'b', 'c']) await queue.add(jobs, { jobId: id });
    expect(await queue.removeWaiting(jobs, (p) => p.jobId === 'b')).toBe(1);
    const seen: string[] = [];
    queue.process(jobs, async ({ jobId }) => {
      seen.push(jobId);
      if (jobId === 'a') throw new Error('boom');
    });
    await new Promise((r) => setTimeout(r, 20));
    await queue.close();
    expect(seen).toEqual(['a', 'c']);
    expect(errors).toHaveLength(1);
  });
});
