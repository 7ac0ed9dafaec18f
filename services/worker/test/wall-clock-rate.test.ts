// The rate a finished job records for pre-flight's estimates: its trained tokens over the wall-clock time between its
// first and last progress events, pauses included (#39), not the mean of the per-step rates.
import { describe, expect, it } from 'vitest';
import { wallClockRate } from '../src/training/core-events.ts';

describe('wallClockRate', () => {
  it('is the tokens between the first and last counts over the time between them, pauses included', () => {
    // 3 steps of 1,000 tokens a second each, then a 2 s evaluation, then 2 more: 5,000 tokens in 7 s
    expect(wallClockRate({ at: 10_000, tokens: 1000 }, { at: 17_000, tokens: 6000 })).toBeCloseTo(5000 / 7, 6);
  });

  it('cannot be told from fewer than two counts, counts under a second apart, or no tokens between them', () => {
    expect(wallClockRate(undefined, undefined)).toBeNull();
    expect(wallClockRate({ at: 0, tokens: 100 }, { at: 0, tokens: 100 })).toBeNull(); // one count: first and last alike
    expect(wallClockRate({ at: 0, tokens: 100 }, { at: 500, tokens: 200 })).toBeNull();
    expect(wallClockRate({ at: 0, tokens: 100 }, { at: 5000, tokens: 100 })).toBeNull();
  });
});
