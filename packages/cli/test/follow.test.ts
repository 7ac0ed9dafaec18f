// How a job's events read as lines (`jobs logs`, `train --follow` off a terminal): an evaluation shows its losses and
// accuracies, not every rate the trainer logs, and the evaluation after training is named so, apart from the
// trainer's evaluation of the same last step.
import { describe, expect, it } from 'vitest';
import { eventLine } from '../src/follow.ts';

describe('eventLine for metrics', () => {
  it("the trainer's evaluation: step, loss and accuracies to 4 figures, without runtimes and rates", () => {
    const line = eventLine({
      event: 'metrics',
      data: { step: 100, eval_loss: 1.234567891, perplexity: null, accuracy: null, eval_runtime: 0.8123, eval_samples_per_second: 12.345, eval_steps_per_second: 3.2, eval_mean_token_accuracy: 0.5123456, eval_entropy: 2.2, eval_num_tokens: 640 },
    });
    expect(line).toBe('eval at step 100: eval_loss 1.235  eval_mean_token_accuracy 0.5123');
  });

  it('the evaluation after training is the final one, not a second "eval at step 100"', () => {
    const line = eventLine({ event: 'metrics', data: { step: 100, eval_loss: 0.52, perplexity: 1.682, accuracy: 0.91, eval_runtime: 0.4, final: true } });
    expect(line).toBe('final evaluation (every assistant token of the test split): eval_loss 0.52  perplexity 1.682  accuracy 0.91');
  });

  it('GRPO rewards and the kept best step are shown', () => {
    expect(eventLine({ event: 'metrics', data: { step: 30, reward: 0.75, 'rewards/format': 0.5, final: true } })).toBe('after training (the rewards of step 30): reward 0.75  rewards/format 0.5');
    expect(eventLine({ event: 'metrics', data: { step: 30, best_step: 20 } })).toBe('eval at step 30: best_step 20');
  });
});

describe('a GRPO job reads as its reward (#39)', () => {
  it('a step shows its reward, not its ~0 loss', () => {
    expect(eventLine({ event: 'progress', data: { step: 3, total_steps: 18, loss: 0, reward: 0.25, epoch: 0.1 } })).toBe('step 3/18  reward 0.2500  epoch 0.1');
    expect(eventLine({ event: 'progress', data: { step: 3, total_steps: 18, loss: 1.5 } })).toBe('step 3/18  loss 1.5000');
  });

  it('the rewards after training are not called an evaluation of the test split', () => {
    const line = eventLine({ event: 'metrics', data: { step: 18, eval_loss: null, perplexity: null, reward: 0.5, final: true } });
    expect(line).toBe('after training (the rewards of step 18): reward 0.5');
  });
});
