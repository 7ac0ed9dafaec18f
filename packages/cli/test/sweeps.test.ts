// ftune sweep create's --search: each a field of training_config and its range, as POST /sweeps takes them.
import { InvalidArgumentError } from '@commander-js/extra-typings';
import { describe, expect, it } from 'vitest';
import { parseSearch } from '../src/commands/sweeps.ts';

describe('--search KEY=RANGE', () => {
  it('reads float and int ranges (log scale too) and choices, a bare key as a hyperparameter', () => {
    let space = parseSearch('learning_rate=float:1e-5:1e-3:log');
    space = parseSearch('lora_rank=choice:8,16,32', space);
    space = parseSearch('eval_config.eval_steps=int:5:20', space);
    space = parseSearch('lr_scheduler_type=choice:linear,cosine', space);
    expect(space).toEqual({
      'hyperparameters.learning_rate': { type: 'float', low: 1e-5, high: 1e-3, log: true },
      'hyperparameters.lora_rank': { type: 'choice', choices: [8, 16, 32] },
      'eval_config.eval_steps': { type: 'int', low: 5, high: 20, log: false },
      'hyperparameters.lr_scheduler_type': { type: 'choice', choices: ['linear', 'cosine'] },
    });
  });

  it('says what a range must look like', () => {
    for (const [text, message] of [
      ['learning_rate', /expected KEY=float:LOW:HIGH/],
      ['learning_rate=float:1e-5', /expected float:LOW:HIGH or float:LOW:HIGH:log/],
      ['learning_rate=float:a:1', /LOW must be a number, not "a"/],
      ['learning_rate=float:1:2:ln', /expected float:LOW:HIGH or float:LOW:HIGH:log/],
      ['lora_rank=choice:', /choice needs values/],
      ['lora_rank=range:1:2', /the range is float:…, int:… or choice:…, not "range"/],
    ] as const) {
      expect(() => parseSearch(text), text).toThrow(InvalidArgumentError);
      expect(() => parseSearch(text), text).toThrow(message);
    }
  });
});
