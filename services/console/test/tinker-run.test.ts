// A Tinker run on the console (#60): the training service presents it as a job (trainer tinker, paused while idle), and
// its page and the jobs list say what it is in words — its state, its saved weights' kind, the /v1 model name of its
// sampler weights — and offer only what applies to it (no pause or resume: they answer 409).
import { describe, expect, it } from 'vitest';
import { isTinkerRun, jobDisplayName, loraLayers, runActions, runState, runStatusLabel, tinkerConfigOf, tinkerModelName, weightsKindLabel } from '../web/src/pages/training/tinker-run.ts';

const lora = { rank: 32, train_mlp: true, train_attn: true, train_unembed: false, seed: null };
const run = {
  job_name: 'tinker sess_1:train:0',
  training_config: { trainer_type: 'tinker', method: 'LoRA', base_model_id: 'Qwen/Qwen3-0.6B', model_id: 'sess_1:train:0', session_id: 'sess_1', lora },
};
const job = { job_name: 'my sft job', training_config: { trainer_type: 'sft', method: 'LoRA' } };

describe('a Tinker run', () => {
  it('is told from a job by its trainer_type, and its settings read from its training_config', () => {
    expect(isTinkerRun(run)).toBe(true);
    expect(isTinkerRun(job)).toBe(false);
    expect(isTinkerRun(undefined)).toBe(false);
    expect(tinkerConfigOf(run)).toMatchObject({ model_id: 'sess_1:train:0', session_id: 'sess_1', lora: { rank: 32 } });
    expect(tinkerConfigOf(job)).toBeUndefined();
  });

  it('says its state in words: held, idle (resumed by its next call), queued, or failed with why', () => {
    expect(runState({ status: 'training', error: null })).toBe('held by a worker');
    expect(runState({ status: 'paused', error: null })).toBe('idle — its state is saved; the next call from the SDK resumes it');
    expect(runState({ status: 'queued', error: null })).toBe('queued');
    expect(runState({ status: 'failed', error: 'cancelled by the user' })).toBe('failed: cancelled by the user');
    expect(runState({ status: 'failed', error: null })).toBe('failed');
  });

  it('reads idle, not paused, on its badge (nobody paused it); a job keeps its status', () => {
    expect(runStatusLabel({ ...run, status: 'paused' })).toBe('idle');
    expect(runStatusLabel({ ...run, status: 'training' })).toBe('training');
    expect(runStatusLabel({ ...job, status: 'paused' })).toBe('paused');
  });

  it('is listed by its model_id; a job by its name', () => {
    expect(jobDisplayName(run)).toBe('sess_1:train:0');
    expect(jobDisplayName(job)).toBe('my sft job');
  });

  it('names the layers its LoRA trains', () => {
    expect(loraLayers(lora)).toBe('MLP, attention');
    expect(loraLayers({ ...lora, train_unembed: true })).toBe('MLP, attention, output layer');
    expect(loraLayers({ ...lora, train_mlp: false, train_attn: false })).toBe('none');
  });

  it('is cancelled while queued, held or idle, and deleted once no worker holds it or is about to', () => {
    expect(runActions({ status: 'queued' })).toEqual({ cancel: true, remove: false });
    expect(runActions({ status: 'training' })).toEqual({ cancel: true, remove: false });
    expect(runActions({ status: 'paused' })).toEqual({ cancel: true, remove: true });
    expect(runActions({ status: 'failed' })).toEqual({ cancel: false, remove: true });
  });
});

describe('its saved weights', () => {
  it('are a state (save_state) or sampler weights (save_weights_for_sampler)', () => {
    expect(weightsKindLabel('weights')).toBe('state');
    expect(weightsKindLabel('sampler_weights')).toBe('sampler');
    expect(weightsKindLabel(undefined)).toBe('—');
  });

  it('are a model on /v1 when they are sampler weights: tinker:<run id>:<name>', () => {
    expect(tinkerModelName('run_abc', 'step-10')).toBe('tinker:run_abc:step-10');
  });
});
