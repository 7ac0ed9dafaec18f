// Parsers of option values shared by the commands (numbers, and which checkpoint of a job's model); a bad value is
// commander's usage error (exit 2).
import { InvalidArgumentError } from '@commander-js/extra-typings';

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('a positive whole number');
  return n;
}

/** The name a Tinker training run gave save_weights_for_sampler (the API's CheckpointName). */
export const CHECKPOINT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Which model of a job `--checkpoint` (or comparisons' `job_…@…`) names, as the API's fields: exactly one of them. */
export type CheckpointChoice = { checkpoint_step: number; checkpoint_name?: undefined } | { checkpoint_name: string; checkpoint_step?: undefined };

export const CHECKPOINT_HELP = 'a stored checkpoint’s step, or the name of a Tinker run’s sampler weights (name:NAME when the name is a number)';

/** `<step|name>`: a whole number is a stored checkpoint's step (from 1), anything else the name of a Tinker run's
 *  sampler weights (the job_id then the run's id). Digits with a leading zero are a name: the tinker-cookbook names the
 *  weights it saves by their step, "000010" (checkpoint_utils), and a step is never written so. `name:NAME` is a name
 *  whatever it holds ("name:10"; no name has a colon). */
export function checkpointChoice(value: string): CheckpointChoice {
  const wrong = () =>
    new InvalidArgumentError('a stored checkpoint’s step (a whole number from 1) or the name of a Tinker run’s sampler weights (up to 128 letters, digits, ".", "_" and "-", the first a letter or digit; name:NAME when it is a number)');
  const named = value.startsWith('name:') ? value.slice('name:'.length) : undefined;
  if (named === undefined && /^\d+$/.test(value.trim()) && !/^0\d/.test(value.trim())) {
    const step = Number(value);
    if (!Number.isSafeInteger(step) || step < 1) throw wrong();
    return { checkpoint_step: step };
  }
  const name = named ?? value;
  if (!CHECKPOINT_NAME.test(name)) throw wrong();
  return { checkpoint_name: name };
}

/** How a job's model is told after its job_id: " (sampler weights NAME)", " at checkpoint STEP", or nothing. */
export function checkpointText(model: { checkpoint_step?: number | null | undefined; checkpoint_name?: string | null | undefined }): string {
  if (model.checkpoint_name) return ` (sampler weights ${model.checkpoint_name})`;
  return model.checkpoint_step ? ` at checkpoint ${model.checkpoint_step}` : '';
}

/** A parser of a number from `min` to `max`, `what` saying what it means in the error. */
export function numberFrom(min: number, max: number, what: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!value.trim() || !Number.isFinite(n) || n < min || n > max) throw new InvalidArgumentError(what);
    return n;
  };
}
