// A job's event log as OpenAI's fine-tuning events (presentEvent): a GRPO job's steps read as its reward, since its
// loss is ~0 by construction, and the figures after training of a job with no validation file are no
// "validation loss=n/a" evaluation (#39 item 5).
import { describe, expect, it } from 'vitest';
import type { JobEventRow, TrainingJobRow } from '@ftp/platform';
import { epochsRun, presentEvent } from '../src/presenters.ts';

const job = (trainer: string) => ({ job_id: 'job_1', base_model_id: 'tiny', training_config: { trainer_type: trainer }, openai: null }) as unknown as TrainingJobRow;
const event = (kind: JobEventRow['kind'], data: Record<string, unknown>): JobEventRow => ({ job_id: 'job_1', seq: 7, kind, data, created_at: new Date('2026-01-01T00:00:00Z') });

describe('fine-tuning events of a GRPO job', () => {
  it('shows each step’s reward, not its ~0 loss', () => {
    const step = presentEvent(job('grpo'), event('progress', { step: 3, total_steps: 18, loss: 0, extra: { reward: 0.25, reward_std: 0.1 } }));
    expect(step?.message).toBe('Step 3/18: reward=0.2500');
    expect(step?.data).toMatchObject({ step: 3, train_loss: 0, train_reward_mean: 0.25 });
  });

  it('says the rewards training ended with, and no validation loss it does not have', () => {
    const final = presentEvent(job('grpo'), event('metrics', { step: 18, final: true, eval_loss: null, perplexity: null, accuracy: null, reward: 0.5, reward_std: 0, 'rewards/exact/mean': 0.5 }));
    expect(final?.message).toBe('Training ended at step 18: reward=0.5000');
    expect(final?.message).not.toMatch(/validation loss/);
    expect(final?.data).toEqual({ step: 18, train_reward_mean: 0.5, train_reward_std: 0, train_rewards: { exact: 0.5 } });
  });

  it('leaves out an evaluation with no figure at all', () => {
    expect(presentEvent(job('grpo'), event('metrics', { step: 4, eval_loss: null }))).toBeNull();
  });
});

describe('fine-tuning events of an SFT job', () => {
  it('keep the training loss and the validation loss', () => {
    expect(presentEvent(job('sft'), event('progress', { step: 2, total_steps: 10, loss: 1.5, extra: {} }))?.message).toBe('Step 2/10: training loss=1.5000');
    expect(presentEvent(job('sft'), event('metrics', { step: 10, final: true, eval_loss: 1.25 }))?.message).toBe('Final evaluation at step 10: validation loss=1.2500');
  });
});

describe('n_epochs of a job made through POST /train', () => {
  // #40: a max_steps job showed its unused epochs (3) though its checkpoints reached epoch 32.
  const config = (hyperparameters: Record<string, unknown>) => ({ base_model_id: 'tiny', trainer_type: 'sft', hyperparameters });
  it('is the epochs max_steps reached, the last one partly, once the pre-flight report counts the steps per epoch', () => {
    expect(epochsRun({ training_config: config({ epochs: 3, max_steps: 1500 }), preflight: { steps: { per_epoch: 47, total: 1500 } } })).toBe(32);
    expect(epochsRun({ training_config: config({ epochs: 3, max_steps: 94 }), preflight: { steps: { per_epoch: 47, total: 94 } } })).toBe(2);
  });
  it('is the requested epochs without max_steps, or before the report', () => {
    expect(epochsRun({ training_config: config({ epochs: 5 }), preflight: { steps: { per_epoch: 47, total: 235 } } })).toBe(5);
    expect(epochsRun({ training_config: config({ epochs: 3, max_steps: 1500 }), preflight: null })).toBe(3);
  });
});
