// Pause and resume, on the embedded pieces with a real worker and the tiny model: a training job paused mid-run
// checkpoints, frees its worker and waits paused; resumed, it continues from that checkpoint to the same last step,
// with the loss and learning rate of every step equal to those of the same job run without a pause. Without a worker:
// a queued job pauses at once and stays out of the queue; what cannot be paused or resumed is a 409; a paused job can
// be cancelled.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loraRequest, qaCsv, startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';

let h: TrainingHarness;
let dataset: string;

const ended = (j: Record<string, unknown>) => j.status === 'completed' || j.status === 'failed';
// Long enough (~20 steps a second here) that the pause, seen within a heartbeat (2 s), lands mid-run.
const STEPS = 160;
const request = () => loraRequest(dataset, { max_steps: STEPS, logging_steps: 1, save_strategy: 'no' });

/** Each step's loss and learning rate (logged every step: a logged loss is the mean since the last log, which a resume
 *  restarts); a step logged twice (before a pause and again after) keeps its last. */
async function curve(jobId: string): Promise<Map<number, { loss: number; learning_rate: number }>> {
  const steps = new Map<number, { loss: number; learning_rate: number }>();
  for (const event of await h.platform.jobs.events(jobId)) {
    const data = event.data as { step?: number; loss?: number; learning_rate?: number };
    if (event.kind === 'progress' && typeof data.loss === 'number' && data.step !== undefined) steps.set(data.step, { loss: data.loss, learning_rate: data.learning_rate! });
  }
  return steps;
}

beforeAll(async () => {
  h = await startTrainingHarness();
  dataset = await h.dataset(qaCsv());
}, 300_000);
afterAll(() => h?.close());

describe('a training job paused mid-run and resumed', () => {
  it('checkpoints, frees its worker, and continues to the same steps with the same losses as an uninterrupted run', async () => {
    const whole = (await h.train({ method: 'POST', url: '/train', payload: request() })).json().job_id as string;
    expect((await h.waitFor(whole, ended, 240_000)).status).toBe('completed');
    const expected = await curve(whole);
    expect(Math.max(...expected.keys())).toBe(STEPS);

    const jobId = (await h.train({ method: 'POST', url: '/train', payload: request() })).json().job_id as string;
    await h.waitFor(jobId, (j) => ((j.progress as { step?: number } | null)?.step ?? 0) >= 4, 240_000);
    const asked = await h.train({ method: 'POST', url: `/jobs/${jobId}/pause` });
    expect(asked.statusCode, asked.body).toBe(200);
    expect(['preparing', 'training', 'paused']).toContain(asked.json().status);
    const paused = await h.waitFor(jobId, (j) => j.status === 'paused' || ended(j), 120_000);
    expect(paused.status, JSON.stringify(paused.error)).toBe('paused');
    const row = (await h.platform.jobs.getForWorker(jobId))!;
    expect(row.worker_id).toBeNull();
    expect(row.pause_requested).toBe(false);
    const checkpoint = (await h.platform.jobs.checkpoints(jobId)).at(-1)!.step;
    expect(checkpoint).toBeGreaterThanOrEqual(4);
    expect(checkpoint).toBeLessThan(STEPS);
    const said = (await h.platform.jobs.events(jobId)).map((e) => (e.data as { message?: string }).message);
    expect(said).toContain(`paused by the user at checkpoint step ${checkpoint}: a resume continues from there`);
    // Paused twice is a 409 that says why.
    const again = await h.train({ method: 'POST', url: `/jobs/${jobId}/pause` });
    expect(again.statusCode).toBe(409);
    expect(again.json().detail).toBe(`job ${jobId} is paused; only queued, preparing or training jobs can be paused`);

    const resumed = await h.train({ method: 'POST', url: `/jobs/${jobId}/resume` });
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(resumed.json().status).toBe('queued');
    const done = await h.waitFor(jobId, ended, 240_000);
    expect(done.status, JSON.stringify(done.error)).toBe('completed');
    const messages = (await h.platform.jobs.events(jobId)).map((e) => (e.data as { message?: string }).message);
    expect(messages).toContain(`resumed by the user: queued to continue from checkpoint step ${checkpoint}`);
    expect(messages.some((m) => m?.startsWith(`resumed from step ${checkpoint} on `))).toBe(true);

    const got = await curve(jobId);
    expect([...got.keys()].sort((a, b) => a - b)).toEqual([...expected.keys()].sort((a, b) => a - b));
    for (const [step, { loss, learning_rate }] of expected) {
      expect(got.get(step)!.loss, `loss at step ${step}`).toBeCloseTo(loss, 4);
      expect(got.get(step)!.learning_rate, `learning rate at step ${step}`).toBeCloseTo(learning_rate, 8);
    }
  }, 600_000);
});

describe('pausing without a worker', () => {
  let idle: TrainingHarness;
  beforeAll(async () => {
    idle = await startTrainingHarness({}, { worker: false });
  }, 120_000);
  afterAll(() => idle?.close());

  it('pauses a queued job at once, out of the queue; resumes it to the queue; cancels a paused one', async () => {
    const processed = await idle.dataset(qaCsv());
    const jobId = (await idle.train({ method: 'POST', url: '/train', payload: loraRequest(processed) })).json().job_id as string;
    const resumeQueued = await idle.train({ method: 'POST', url: `/jobs/${jobId}/resume` });
    expect(resumeQueued.statusCode).toBe(409);
    expect(resumeQueued.json().detail).toBe(`job ${jobId} is queued; only a paused job can be resumed`);

    const paused = await idle.train({ method: 'POST', url: `/jobs/${jobId}/pause` });
    expect(paused.statusCode, paused.body).toBe(200);
    expect(paused.json().status).toBe('paused');
    // The queue's entry no longer counts: the reconciler finds no row waiting for it.
    expect((await idle.platform.jobs.listByStatus(['queued'])).map((j) => j.job_id)).not.toContain(jobId);

    expect((await idle.train({ method: 'POST', url: `/jobs/${jobId}/resume` })).json().status).toBe('queued');
    expect((await idle.train({ method: 'POST', url: `/jobs/${jobId}/pause` })).json().status).toBe('paused');
    const cancelled = await idle.train({ method: 'POST', url: `/jobs/${jobId}/cancel` });
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(cancelled.json()).toMatchObject({ status: 'failed', error: 'cancelled by user' });
    const late = await idle.train({ method: 'POST', url: `/jobs/${jobId}/resume` });
    expect(late.statusCode).toBe(409);
    expect((await idle.train({ method: 'POST', url: '/jobs/job_0123456789abcdef01234567/pause' })).statusCode).toBe(404);
  });
});
