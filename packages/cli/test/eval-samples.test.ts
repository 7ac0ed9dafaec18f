// ftune eval --samples: the table of predictions keeps its shape on a terminal (#39: a long prediction was printed
// whole and ran the table off the screen): each text on one line, cut to its share of the width.
import { describe, expect, it } from 'vitest';
import { sampleRows } from '../src/commands/eval.ts';

const long = 'The capital of Belgium is Brussels, which is also the seat of the European Commission and '.repeat(4);
const samples = [{ sample_index: 3, input: [{ role: 'user' as const, content: 'What is the capital\nof Belgium?' }], reference: 'Brussels', prediction: long }];

describe('sampleRows', () => {
  it('cuts long texts to a third of the terminal each, on one line, marked with …', () => {
    const [index, prompt, reference, prediction] = sampleRows(samples, 120)[0]!;
    expect([index, prompt, reference]).toEqual([3, 'What is the capital of Belgium?', 'Brussels']);
    expect(prediction.length).toBeLessThanOrEqual(40);
    expect(prediction.endsWith('…')).toBe(true);
    expect(long.startsWith(prediction.slice(0, -1))).toBe(true);
  });

  it('fits a table of four columns into the width', () => {
    const [, prompt, reference, prediction] = sampleRows(samples, 80)[0]!;
    // "│ 3 │ " then each text cell with its padding and border
    expect(6 + [prompt, reference, prediction].reduce((sum, cell) => sum + cell.length + 3, 0)).toBeLessThanOrEqual(80);
  });
});
