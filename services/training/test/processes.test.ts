// One job on two processes (TRAIN_PROCESSES=2: torchrun, DDP over gloo on this CPU machine), through the service
// and a real worker: it completes with one progress event per step (rank 0 alone reports), its loss falls, and its
// adapter is stored as a one-process job's is. The core's own test (core/tests/test_distributed.py) shows that the
// two ranks train the same global batches as one process.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loraRequest, qaCsv, startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';

let h: TrainingHarness;
let dataset: string;

beforeAll(async () => {
  h = await startTrainingHarness({ TRAIN_PROCESSES: '2' });
  dataset = await h.dataset(qaCsv());
}, 240_000);
afterAll(() => h?.close());

it('trains one job on two processes: one report per step, falling loss, the adapter stored', async () => {
  const res = await h.train({ method: 'POST', url: '/train', payload: loraRequest(dataset, { max_steps: 12, logging_steps: 1, batch_size: 2 }) });
  expect(res.statusCode, res.body).toBe(200);
  const jobId = res.json().job_id as string;
  const job = await h.waitFor(jobId, (j) => j.status === 'completed' || j.status === 'failed', 300_000);
  expect(job.status, JSON.stringify(job.error)).toBe('completed');
  expect(h.platform.logText()).toContain('"processes":2');

  const events = await h.platform.jobs.events(jobId, 0);
  const steps = events.filter((e) => e.kind === 'progress').map((e) => (e.data as { step: number }).step);
  expect(steps).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
  const losses = events.filter((e) => e.kind === 'progress').map((e) => (e.data as { loss: number }).loss);
  expect(losses.at(-1)!).toBeLessThan(losses[0]!);
  const adapter = h.platform.blobs.keyFromUri(job.adapter_path as string)!;
  expect((await h.platform.blobs.list(adapter)).map((b) => b.key.slice(adapter.length))).toEqual(
    expect.arrayContaining(['/adapter_config.json', '/adapter_model.safetensors']),
  );
}, 360_000);
