// Checkpoints you can use, on the embedded pieces with a real worker and the tiny model: a job that saves and
// evaluates every 4 steps and keeps its best checkpoint lists its checkpoints (step, epoch, losses, size) and
// says which step it kept; one of them is exported, served and continued from (the new job records its parent
// and starts from the trained adapter); bad continuations are refused before queueing.
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildExportApp } from '@ftp/export';
import { buildInferenceApp } from '@ftp/inference';
import { checkedInject } from '../../../test/contract/openapi-contract.ts';
import { loraRequest, qaCsv, startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';

let h: TrainingHarness;
let exportApp: FastifyInstance;
let inferenceApp: FastifyInstance;
let dataset: string;
let parentId: string;
let parent: Record<string, any>;
let steps: number[];

const ended = (j: Record<string, unknown>) => j.status === 'completed' || j.status === 'failed';
const exportCall = (o: InjectOptions) => checkedInject('export', exportApp, o);
const inferenceCall = (o: InjectOptions) => checkedInject('inference', inferenceApp, o);
const firstLoss = async (jobId: string) => (await h.platform.jobs.events(jobId)).find((e) => e.kind === 'progress' && typeof e.data.loss === 'number')!.data.loss as number;

beforeAll(async () => {
  h = await startTrainingHarness();
  exportApp = await buildExportApp(h.platform);
  inferenceApp = await buildInferenceApp(h.platform);
  dataset = await h.dataset(qaCsv());
  const body = loraRequest(dataset, { max_steps: 12, logging_steps: 2, save_strategy: 'steps', save_steps: 4 }, {
    eval_config: { eval_strategy: 'steps', eval_steps: 4, load_best_model_at_end: true },
  });
  parentId = (await h.train({ method: 'POST', url: '/train', payload: body })).json().job_id;
  parent = await h.waitFor(parentId, ended, 240_000);
  expect(parent.status, JSON.stringify(parent.error)).toBe('completed');
}, 300_000);
afterAll(async () => {
  await exportApp?.close();
  await inferenceApp?.close();
  await h?.close();
});

describe('GET /jobs/{id}/checkpoints', () => {
  it('lists each stored checkpoint with its epoch, losses and size, and the job says which step it kept', async () => {
    const res = await h.train({ url: `/jobs/${parentId}/checkpoints` });
    expect(res.statusCode, res.body).toBe(200);
    const checkpoints = res.json().checkpoints as Array<{ step: number; epoch: number; train_loss: number; eval_loss: number; size_bytes: number }>;
    steps = checkpoints.map((c) => c.step);
    expect(steps.length).toBeGreaterThan(0);
    for (const c of checkpoints) {
      expect([4, 8, 12]).toContain(c.step);
      expect(c.epoch).toBeGreaterThan(0);
      expect(Number.isFinite(c.train_loss)).toBe(true);
      expect(Number.isFinite(c.eval_loss)).toBe(true); // saved where it evaluated
      expect(c.size_bytes).toBeGreaterThan(1000);
    }
    expect(steps).toContain(parent.best_step);
    expect((await h.train({ url: '/jobs/job_nothing/checkpoints' })).statusCode).toBe(404);
  });
});

describe('a checkpoint as a model', () => {
  it('batch inference on the kept checkpoint gives the final model’s text; an unknown step is a 422 listing the real ones', async () => {
    const messages = [[{ role: 'user', content: 'What is two plus two?' }], [{ role: 'user', content: 'Name a fruit.' }]];
    const ask = (extra: Record<string, unknown>) => inferenceCall({ method: 'POST', url: '/inference/batch', payload: { job_id: parentId, messages, max_new_tokens: 6, ...extra } });
    const final = await ask({});
    const kept = await ask({ checkpoint_step: parent.best_step });
    expect(final.statusCode, final.body).toBe(200);
    expect(kept.statusCode, kept.body).toBe(200);
    expect(kept.json().results).toEqual(final.json().results);
    const unknown = await ask({ checkpoint_step: 5 });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().detail).toEqual([{ loc: ['body', 'checkpoint_step'], msg: expect.stringContaining(`its checkpoints are at steps ${steps.join(', ')}`), type: 'unknown_checkpoint' }]);
    const onBase = await inferenceCall({ method: 'POST', url: '/inference/batch', payload: { model_source: 'base', base_model_id: 'tiny', checkpoint_step: 4, messages } });
    expect(onBase.statusCode).toBe(422);
  });

  it('exports a checkpoint beside the final model, and downloads it', async () => {
    const step = steps[0]!;
    const created = await exportCall({ method: 'POST', url: '/exports', payload: { job_id: parentId, export_type: 'adapter', checkpoint_step: step } });
    expect(created.statusCode, created.body).toBe(200);
    expect(created.json().message).toContain(`at checkpoint ${step}`);
    const done = await waitForExport(created.json().export_id);
    expect(done.latest_export).toMatchObject({ status: 'completed', checkpoint_step: step });
    expect(done.latest_export.artifacts.find((a: { variant: string }) => a.variant === 'file').path).toContain(`/exports/checkpoint-${step}/adapter.tar.gz`);
    // The job's own artifact groups still name its final model only.
    expect(done.artifacts.file.adapter).toBeUndefined();
    const download = await exportCall({ url: `/exports/${parentId}/download?type=adapter&checkpoint_step=${step}` });
    expect(download.statusCode).toBe(200);
    expect(download.headers['content-disposition']).toContain(`checkpoint-${step}-adapter.tar.gz`);
    expect((await exportCall({ url: `/exports/${parentId}/download?type=merged&checkpoint_step=${step}` })).statusCode).toBe(404);
  });
});

describe('continuing a job', () => {
  it('starts from the parent’s checkpoint, records its parent, and trains on from where it was', async () => {
    const step = steps[0]!;
    const body = loraRequest(dataset, { max_steps: 4, logging_steps: 1 }, { from_job: parentId, from_checkpoint_step: step });
    const childId = (await h.train({ method: 'POST', url: '/train', payload: body })).json().job_id;
    const child = await h.waitFor(childId, ended, 240_000);
    expect(child.status, JSON.stringify(child.error)).toBe('completed');
    expect(child.parent).toEqual({ job_id: parentId, checkpoint_step: step });
    expect(await firstLoss(childId)).toBeLessThan(await firstLoss(parentId));
  });

  it.each([
    ['another base', { base_model_id: 'other-base', from_job: 'PARENT' }, 'from_job', /was trained on base "tiny", not "other-base"/],
    ['a checkpoint it does not have', { from_job: 'PARENT', from_checkpoint_step: 7 }, 'from_checkpoint_step', /has no checkpoint at step 7; its checkpoints are at steps/],
    ['a checkpoint without the job', { from_checkpoint_step: 4 }, 'from_checkpoint_step', /send from_job too/],
    ['keeping the best without evaluations', { eval_config: { load_best_model_at_end: true } }, 'eval_config.load_best_model_at_end', /needs evaluations/],
    ['the best by valid_score without graders', { eval_config: { eval_strategy: 'steps', metric_for_best: 'valid_score' } }, 'eval_config.metric_for_best', /send eval_config.graders/],
    ['graders without evaluations', { eval_config: { graders: [{ type: 'string_check', name: 'a', input: '{{sample.output_text}}', reference: '{{item.reference}}', operation: 'eq' }] } }, 'eval_config.graders', /set eval_strategy to steps or epoch/],
  ])('%s → 422 at the field', async (_name, config, field, msg) => {
    const resolved = JSON.parse(JSON.stringify(config).replaceAll('PARENT', parentId)) as Record<string, unknown>;
    const res = await h.train({ method: 'POST', url: '/train', payload: loraRequest(dataset, {}, resolved) });
    expect(res.statusCode, res.body).toBe(422);
    const issue = res.json().detail.find((d: { loc: string[] }) => d.loc.join('.') === `body.training_config.${field}`);
    expect(issue, res.body).toBeDefined();
    expect(issue.msg).toMatch(msg);
  });

  it('someone else’s job is a 404', async () => {
    const res = await h.train({ method: 'POST', url: '/train', payload: loraRequest(dataset, {}, { from_job: 'job_0123456789abcdef01234567' }) });
    expect(res.statusCode).toBe(404);
  });
});

async function waitForExport(exportId: string): Promise<Record<string, any>> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const details = (await exportCall({ url: `/exports/${parentId}` })).json();
    if (details.latest_export?.export_id === exportId && details.latest_export.status !== 'running') return details;
    if (Date.now() > deadline) throw new Error(`export ${exportId} did not finish: ${JSON.stringify(details)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
