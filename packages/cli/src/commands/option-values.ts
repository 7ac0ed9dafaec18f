// Parsers of numeric option values shared by the commands; a bad value is commander's usage error (exit 2).
import { InvalidArgumentError } from '@commander-js/extra-typings';

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('a positive whole number');
  return n;
}

/** A parser of a number from `min` to `max`, `what` saying what it means in the error. */
export function numberFrom(min: number, max: number, what: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!value.trim() || !Number.isFinite(n) || n < min || n > max) throw new InvalidArgumentError(what);
    return n;
  };
}
