// The launch form's presets: a preset that stops after a fixed number of steps evaluates within them when the user
// turns evaluation on (#39: "Quick check" ran 30 steps with eval_steps at its default of 50, so it never evaluated);
// and the settings the form offers and sends are those the chosen trainer and method read.
import { describe, expect, it } from 'vitest';
import { jobConfig } from '@ftp/schema';
import { appliedTrainingConfig } from '../../../packages/jobs/src/training/applied-config.ts';
import { cleanValues, fieldsFor, HYPERPARAMETERS, PRESETS, presetSettings, type PresetName } from '../web/src/pages/training/training-schema.ts';

describe('presets', () => {
  for (const name of Object.keys(PRESETS) as PresetName[]) {
    it(`${name}: eval_strategy steps would evaluate within the run`, () => {
      const { hyperparameters, evalConfig } = presetSettings(name);
      const maxSteps = Number(hyperparameters.max_steps);
      if (maxSteps > 0) expect(Number(evalConfig.eval_steps)).toBeLessThanOrEqual(maxSteps);
      expect(evalConfig.eval_strategy).toBe('no'); // evaluating stays the user's choice (it needs a test split)
    });
  }
});

describe('the launch form for each trainer and method', () => {
  const trainers = ['sft', 'dpo', 'orpo', 'grpo'];
  const methods = ['LoRA', 'QLoRA', 'Full'];

  it('an SFT job shows and sends no DPO or GRPO setting, though the preset sets one (#54)', () => {
    const { hyperparameters } = presetSettings('quick');
    expect(hyperparameters.max_prompt_length).toBe(256);
    const sft = fieldsFor(HYPERPARAMETERS, 'sft', 'LoRA');
    const sent = cleanValues(sft, hyperparameters);
    for (const name of ['max_prompt_length', 'num_generations', 'max_completion_length', 'beta', 'rpo_alpha', 'loss_type', 'equal_reward_steps']) {
      expect(sft, name).not.toHaveProperty(name);
      expect(sent, name).not.toHaveProperty(name);
    }
    expect(sent).toMatchObject({ max_steps: 30, packing: false, lora_rank: 16 });
    expect(cleanValues(fieldsFor(HYPERPARAMETERS, 'grpo', 'LoRA'), hyperparameters)).toMatchObject({ max_prompt_length: 256, num_generations: 4 });
    expect(fieldsFor(HYPERPARAMETERS, 'dpo', 'Full')).not.toHaveProperty('lora_rank');
  });

  it('offers exactly the settings the job’s applied config keeps (one statement of which trainer reads what)', () => {
    for (const trainer of trainers) {
      for (const method of methods) {
        // every hyperparameter set to a value it takes (its default, an allowed value, or its maximum)
        const every = Object.fromEntries(Object.entries(HYPERPARAMETERS).map(([name, field]) => [name, field.default ?? field.enum?.[0] ?? (field.type === 'boolean' ? true : (field.maximum ?? 1))]));
        const config = jobConfig({ base_model_id: 'tiny', training_config: { trainer_type: trainer, method, hyperparameters: every } });
        const applied = appliedTrainingConfig(config, null).hyperparameters;
        expect(Object.keys(fieldsFor(HYPERPARAMETERS, trainer, method)), `${trainer} ${method}`).toEqual(Object.keys(applied));
      }
    }
  });
});
