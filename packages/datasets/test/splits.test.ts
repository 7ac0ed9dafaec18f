// Seeded split planning: exact sizes, every row in at most one split, the same plan on every run,
// and no bias towards the start or end of the file.
import { describe, expect, it } from 'vitest';
import { planSplit, TEST, TRAIN } from '../src/processing/splits.ts';

const count = (a: Uint8Array, v: number) => a.reduce((n, x) => n + (x === v ? 1 : 0), 0);

describe('planSplit', () => {
  it('gives exact sizes and is reproducible', () => {
    const a = planSplit({ numRows: 1000, sampleSize: 300, testSize: 0.1, loc: [] });
    expect([a.trainRows, a.testRows, count(a.assignment, TRAIN), count(a.assignment, TEST)]).toEqual([270, 30, 270, 30]);
    const b = planSplit({ numRows: 1000, sampleSize: 300, testSize: 0.1, loc: [] });
    expect(Buffer.from(b.assignment).equals(Buffer.from(a.assignment))).toBe(true);
    const rows = planSplit({ numRows: 50, testSize: 7, loc: [] });
    expect([count(rows.assignment, TRAIN), count(rows.assignment, TEST)]).toEqual([43, 7]);
  });

  it('spreads the chosen rows over the whole file', () => {
    const { assignment } = planSplit({ numRows: 100_000, testSize: 0.1, loc: [] });
    const firstHalf = count(assignment.subarray(0, 50_000), TEST);
    expect(firstHalf).toBeGreaterThan(4_500);
    expect(firstHalf).toBeLessThan(5_500);
  });
});
