// ftune comparisons: how a model is named on the command line, and the summary's lines (the winner only when the
// interval declares one). Its usage errors are in usage.test.ts.
import { describe, expect, it } from 'vitest';
import { comparedModel, summaryRows } from '../src/commands/comparisons.ts';

describe('comparedModel', () => {
  it.each([
    ['job_1', { job_id: 'job_1' }],
    ['job_1/merged', { job_id: 'job_1', model_source: 'merged' }],
    ['job_1@40', { job_id: 'job_1', checkpoint_step: 40 }],
    ['job_1/merged@40', { job_id: 'job_1', model_source: 'merged', checkpoint_step: 40 }],
    // a Tinker run's sampler weights by name (job_id the run's id)
    ['job_x@final', { job_id: 'job_x', checkpoint_name: 'final' }],
    ['job_x/merged@step-10.v2', { job_id: 'job_x', model_source: 'merged', checkpoint_name: 'step-10.v2' }],
    // the tinker-cookbook's names are the step with leading zeros; name: takes any name as one
    ['job_x@000010', { job_id: 'job_x', checkpoint_name: '000010' }],
    ['job_x@name:10', { job_id: 'job_x', checkpoint_name: '10' }],
    ['base:HuggingFaceTB/SmolLM2-135M-Instruct', { model_source: 'base', base_model_id: 'HuggingFaceTB/SmolLM2-135M-Instruct' }],
  ])('%s', (text, model) => expect(comparedModel(text)).toEqual(model));

  it.each(['base:', 'job_1@0', 'job_1@', 'job_1@name:', 'job_1@name:a b', 'job_1@a b', 'job_1@-x', 'job_1@x@y', 'job 1'])('refuses %j', (text) => expect(() => comparedModel(text)).toThrow(/job_…@STEP .*job_…@NAME|base: needs the model/));
});

describe('summaryRows', () => {
  const comparison = {
    id: 'cmp_1', model_a: { model_source: 'adapter' as const, job_id: 'job_1', use_fast_engine: false }, model_b: { model_source: 'base' as const, base_model_id: 'tiny', use_fast_engine: false },
    judge: { model: 'judge', max_tokens: 16 }, pairs: 10, counts: { win: 8, tie: 1, loss: 1 }, rates: { win: 0.8, tie: 0.1, loss: 0.1 },
    win_share: 8 / 9, interval: [0.565, 0.98] as [number, number], position_consistency: 0.9, flipped: [3], unreadable: [], winner: 'A' as const,
  };
  it('says the counts, the interval, the consistency and the winner', () => {
    expect(Object.fromEntries(summaryRows(comparison))).toMatchObject({
      A: 'adapter of job_1', B: 'base tiny', 'A wins': '8 (80.0%)', 'A’s share of decided pairs': '88.9% (95% interval 56.5%–98.0%)',
      'position consistency': '90.0% (flipped on 1: ties)', 'unreadable verdicts': undefined, winner: 'A (adapter of job_1)',
    });
  });
  it('names a checkpoint by its step, and a Tinker run’s sampler weights by their name', () => {
    const a = { ...comparison.model_a, checkpoint_step: 40 };
    const b = { model_source: 'merged' as const, job_id: 'job_x', checkpoint_name: 'final', use_fast_engine: false };
    expect(Object.fromEntries(summaryRows({ ...comparison, model_a: a, model_b: b }))).toMatchObject({ A: 'adapter of job_1 at checkpoint 40', B: 'merged of job_x (sampler weights final)' });
  });
  it('declares no winner while the interval holds 0.5', () => {
    expect(Object.fromEntries(summaryRows({ ...comparison, win_share: null, interval: [0, 1], winner: null }))).toMatchObject({ 'A’s share of decided pairs': 'none decided', winner: 'none declared (the interval holds 50%)' });
  });
});
