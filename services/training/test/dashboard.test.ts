// The job's own page (GET /jobs/{id}/dashboard) reads as the console does (#39 item 6): memory in the unit that suits
// it (the page said "0.00 GiB" where the console said 2.5 MiB), figures rounded and counts with thousands separators
// (not 0.20000000298023224 and 14304), a curve with axis ticks at round numbers and the evaluations as dots, a GRPO
// job's reward rather than its ~0 loss, and an inline icon, so a browser asks for no /favicon.ico (a 404).
import { describe, expect, it } from 'vitest';
import type { JobEventRow, TrainingJobRow } from '@ftp/platform';
import type { PreflightReport } from '@ftp/schema';
import { curvePoints, preflightSection, renderDashboard } from '../src/dashboard.ts';

const MiB = 1024 ** 2;

const report = {
  trainer_type: 'sft', method: 'LoRA', examples: { train: 1200, test: 40 }, max_length: 2048,
  tokens: { min: 12, median: 30.5, p95: 61.2, max: 90, total: 14_304 },
  truncated: { examples: 0, loss_tokens_lost: 0 }, loss_token_share: 0.31, samples: [],
  steps: { per_epoch: 150, total: 1500, effective_batch_size: 8 }, training_tokens: 14_304,
  model: { parameters: 134_515_008, trainable_parameters: 4_884_480, dtype: 'float32' },
  memory: { estimated_peak_bytes: 2.5 * MiB, weights_bytes: MiB, training_state_bytes: MiB, activations_bytes: 0.5 * MiB },
  throughput: null, warnings: [], estimates: [],
} as unknown as PreflightReport;

let seq = 0;
const event = (kind: JobEventRow['kind'], data: Record<string, unknown>): JobEventRow => ({ job_id: 'job_1', seq: ++seq, kind, data, created_at: new Date() });

function job(trainer: string, metrics: Record<string, number> | null = null): TrainingJobRow {
  return {
    job_id: 'job_1', job_name: 'tiny', status: 'completed', base_model_id: 'tiny', training_config: { trainer_type: trainer, method: 'LoRA', hyperparameters: { learning_rate: 0.0002 } },
    progress: { step: 30, total_steps: 30, epoch: 1, loss: 0.5, eta_seconds: 0, reward: 0.75 }, metrics, preflight: report, error: null,
  } as unknown as TrainingJobRow;
}

describe('the job page', () => {
  it('says memory in the unit that suits it and counts with thousands separators', () => {
    const section = preflightSection(report);
    expect(section).toContain('<th>estimated peak memory</th><td>2.5 MiB</td>');
    expect(section).toContain('<th>training tokens</th><td>14,304</td>');
    expect(section).toContain('4,884,480 of 134,515,008');
  });

  it('rounds the metrics a person reads', () => {
    const page = renderDashboard(job('sft', { eval_mean_token_accuracy: 0.20000000298023224, eval_loss: 1.234567, trained_tokens: 14_304 }), []);
    expect(page).toContain('<th>eval_mean_token_accuracy</th><td>0.2</td>');
    expect(page).toContain('<th>eval_loss</th><td>1.235</td>');
    expect(page).toContain('<th>trained_tokens</th><td>14,304</td>');
  });

  it('draws the loss with ticks at round numbers and the evaluations as dots', () => {
    const events = [
      ...Array.from({ length: 30 }, (_, i) => event('progress', { step: i + 1, loss: 3 - i * 0.08 })),
      event('metrics', { step: 10, eval_loss: 2.4 }), event('metrics', { step: 20, eval_loss: 1.7 }), event('metrics', { step: 30, eval_loss: 1.1, final: true }),
    ];
    const page = renderDashboard(job('sft'), events);
    expect(page.match(/<circle class="train"/g)).toHaveLength(30);
    expect(page.match(/<circle class="eval"/g)).toHaveLength(2); // the trainer's; the one after training measures otherwise
    const yTicks = [...page.matchAll(/class="y-tick"[^>]*>([^<]+)</g)].map((m) => m[1]);
    expect(yTicks.length).toBeGreaterThanOrEqual(4);
    expect(yTicks.map(Number).every((v) => Number.isFinite(v) && Math.round(v * 10) === v * 10)).toBe(true);
    const xTicks = [...page.matchAll(/class="x-tick"[^>]*>([^<]+)</g)].map((m) => Number(m[1]));
    expect(xTicks.length).toBeGreaterThanOrEqual(4);
    expect(xTicks.every((v) => Number.isInteger(v) && v % 5 === 0)).toBe(true);
  });

  it('draws a GRPO job’s reward, not its ~0 loss', () => {
    const events = [event('progress', { step: 1, loss: 0, reward: 0.25 }), event('progress', { step: 2, loss: 0, extra: { reward: 0.5 } })];
    expect(curvePoints(events, true).train).toEqual([{ step: 1, value: 0.25 }, { step: 2, value: 0.5 }]);
    const page = renderDashboard(job('grpo'), events);
    expect(page).toContain('<h2>Reward</h2>');
    expect(page).toContain('<th>reward</th><td>0.75</td>');
    expect(page).not.toContain('<th>loss</th>');
  });

  it('carries its icon inline', () => {
    expect(renderDashboard(job('sft'), [])).toMatch(/<link rel="icon" href="data:image\/svg\+xml,/);
  });
});
