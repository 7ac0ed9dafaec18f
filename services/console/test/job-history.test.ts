// A job's event stream as the job page reads it (#39): each log line keeps when it was recorded, the warnings are
// gathered (a warning that the job cannot learn must not sit unread in the scrolled log), a job with no step yet has
// no curve to draw (no empty chart boxes while it prepares), and a GRPO job's curve is its reward.
import { describe, expect, it } from 'vitest';
import { emptyHistory, hasCurves, recordEvent, rewardSeries, validScoreSeries, warningsOf } from '../web/src/api/job-history.ts';
import { formatClock } from '../web/src/components/format.ts';

const at = '2026-03-01T14:03:22.512Z';

describe('the job page’s history', () => {
  it('keeps when each status and log event was recorded', () => {
    const history = emptyHistory();
    recordEvent(history, 'status', { status: 'preparing', created_at: at }, '1');
    recordEvent(history, 'log', { level: 'info', message: 'loading the base model', created_at: at }, '2');
    expect(history.log.map((line) => line.at)).toEqual([at, at]);
    expect(formatClock(at)).toMatch(/^\d\d:\d\d:\d\d$/);
  });

  it('has no curve before the first step, and one after it', () => {
    const history = emptyHistory();
    recordEvent(history, 'status', { status: 'preparing', created_at: at }, '1');
    expect(hasCurves(history)).toBe(false);
    recordEvent(history, 'metrics', { step: 0, final: true, eval_loss: 1, created_at: at }, '2');
    expect(hasCurves(history)).toBe(false); // the evaluation after training draws no curve of its own
    recordEvent(history, 'progress', { step: 1, total_steps: 3, loss: 2, created_at: at }, '3');
    expect(hasCurves(history)).toBe(true);
    expect(history.evals[0]).not.toHaveProperty('created_at'); // an evaluation's figures are numbers only
  });

  it('gathers the warnings, each once', () => {
    const history = emptyHistory();
    for (const [seq, level, message] of [['1', 'info', 'a note'], ['2', 'warning', 'learns nothing'], ['3', 'warning', 'learns nothing'], ['4', 'warning', 'cut rows']]) {
      recordEvent(history, 'log', { level, message, created_at: at }, seq);
    }
    expect(warningsOf(history)).toEqual(['learns nothing', 'cut rows']);
  });

  it('draws a GRPO job’s reward, from its progress or (older jobs) the trainer’s figures', () => {
    const history = emptyHistory();
    recordEvent(history, 'progress', { step: 1, loss: 0, reward: 0.25 }, '1');
    recordEvent(history, 'progress', { step: 2, loss: 0, extra: { reward: 0.5 } }, '2');
    recordEvent(history, 'metrics', { step: 2, eval_loss: null, eval_reward: 0.4 }, '3');
    expect(rewardSeries(history)).toEqual([[1, 2], [0.25, 0.5], [null, 0.4]]);
  });

  it('draws the graders’ score of each evaluation, and each grader’s, and nothing for a job without graders', () => {
    const history = emptyHistory();
    expect(validScoreSeries(history).names).toEqual([]);
    recordEvent(history, 'metrics', { step: 5, eval_loss: 1.2, valid_score: 0.75, 'valid_score/exact': 0.5, 'valid_score/fuzzy': 1 }, '1');
    recordEvent(history, 'metrics', { step: 10, eval_loss: 0.9, valid_score: 0.25, 'valid_score/exact': 0, 'valid_score/fuzzy': 0.5 }, '2');
    recordEvent(history, 'metrics', { step: 10, eval_loss: 0.8, final: true, valid_score: 0.3 }, '3');
    expect(validScoreSeries(history)).toEqual({
      names: ['valid_score', 'valid_score/exact', 'valid_score/fuzzy'],
      data: [[5, 10], [0.75, 0.25], [0.5, 0], [1, 0.5]],
    });
  });
});
