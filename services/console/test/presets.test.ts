// The launch form's presets: a preset that stops after a fixed number of steps evaluates within them when the user
// turns evaluation on (#39: "Quick check" ran 30 steps with eval_steps at its default of 50, so it never evaluated).
import { describe, expect, it } from 'vitest';
import { PRESETS, presetSettings, type PresetName } from '../web/src/pages/training/training-schema.ts';

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
