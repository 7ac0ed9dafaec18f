// A training core SIGKILLed while its worker lives (#56: how a job dies of memory pressure, the kernel taking the core
// first) is handled as a dead worker's job is: with resume_on_restart the job goes back to the queue and resumes from
// its last stored checkpoint, its event saying why and from which step; killed again before it got past that
// checkpoint, it fails with the reason instead of looping. Real cores, real SIGKILLs.
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { jobWorkDir } from '../src/models/job-models.ts';
import { loraRequest, qaCsv, startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';

let h: TrainingHarness;
beforeAll(async () => {
  h = await startTrainingHarness();
});
afterAll(() => h?.close());

function corePids(jobId: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', `ftcore train --spec ${jobWorkDir(h.platform, jobId)}`]).toString().trim().split('\n').map(Number);
  } catch {
    return [];
  }
}

async function until<T>(read: () => Promise<T> | T, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

it('resumes from the last checkpoint once, saying why, and fails when killed again at the same point', async () => {
  const submitted = await h.train({
    method: 'POST',
    url: '/train',
    payload: loraRequest(await h.dataset(qaCsv()), { max_steps: 400, logging_steps: 1, max_length: 32, save_strategy: 'steps', save_steps: 2 }, { resume_on_restart: true }),
  });
  expect(submitted.statusCode).toBe(200);
  const id: string = submitted.json().job_id;
  await until(() => h.platform.jobs.lastCheckpointStep(id), (step) => step !== undefined, 'no checkpoint stored');
  const [first] = corePids(id);
  process.kill(first!, 'SIGKILL');

  const requeued = await until(
    async () => (await h.platform.jobs.events(id)).find((e) => e.data['core_killed'] !== undefined),
    (event) => event !== undefined,
    'not re-queued',
  );
  const from = (requeued!.data['core_killed'] as { from_step: number }).from_step;
  expect(from).toBeGreaterThanOrEqual(2);
  expect(requeued!.data).toMatchObject({
    level: 'warning',
    message: expect.stringMatching(new RegExp(`^the ML core was killed \\(SIGKILL\\) at step \\d+; re-queued to resume from checkpoint step ${from}$`)),
  });
  // The resumed run's core, killed before it gets past that checkpoint (it is still loading the ML libraries).
  const [second] = await until(() => corePids(id), (pids) => pids.length > 0 && pids[0] !== first, 'no second core');
  expect(await h.platform.jobs.lastCheckpointStep(id)).toBe(from);
  process.kill(second!, 'SIGKILL');

  const failed = await h.waitFor(id, (j) => j['status'] === 'failed');
  expect(failed['error']).toBe(`the ML core was killed (SIGKILL) twice at the same point, resuming from checkpoint step ${from}; not resumed again`);
  const statuses = (await h.platform.jobs.events(id)).filter((e) => e.kind === 'status').map((e) => e.data['status']);
  expect(statuses).toEqual(['queued', 'preparing', 'training', 'queued', 'preparing', 'failed']);
});
