// Pairwise judging's arithmetic (#61): judges stood in by functions of the two answers shown, so the expected
// counts are known exactly; the Wilson interval against values computed by hand.
import { describe, expect, it } from 'vitest';
import { judgeMessages, readVerdict, summarize, wilsonInterval, type PairJudgement, type PositionVerdict } from '../src/training/pairwise.ts';

/** Each pair judged in both orders by `judge(first, second)`, as the comparison runs it. */
function judgeAll(pairs: Array<[string, string]>, judge: (first: string, second: string) => PositionVerdict): PairJudgement[] {
  return pairs.map(([a, b], index) => ({ index, aFirst: judge(a, b), bFirst: judge(b, a) }));
}

describe('pairwise judging', () => {
  it('a judge that always prefers the first position is consistent on no pair and declares no winner', () => {
    const pairs: Array<[string, string]> = [['short', 'a much longer answer'], ['x', 'y'], ['same', 'same']];
    const summary = summarize(judgeAll(pairs, () => 'first'));
    expect(summary.counts).toEqual({ win: 0, tie: 3, loss: 0 });
    expect(summary.position_consistency).toBe(0);
    expect(summary.flipped).toEqual([0, 1, 2]);
    expect(summary.win_share).toBeNull();
    expect(summary.interval).toEqual([0, 1]);
    expect(summary.winner).toBeNull();
  });

  it('a judge that prefers the longer answer gives the counts the lengths say', () => {
    // A longer in 14 pairs, B longer in 4, equal lengths in 2 (a tie both ways)
    const pairs: Array<[string, string]> = [
      ...Array.from({ length: 14 }, (_, i): [string, string] => [`answer ${'a'.repeat(i + 5)}`, 'short']),
      ...Array.from({ length: 4 }, (_, i): [string, string] => ['tiny', `answer ${'b'.repeat(i + 5)}`]),
      ['same', 'SAME'],
      ['four', 'FOUR'],
    ];
    const longer = (first: string, second: string): PositionVerdict => (first.length > second.length ? 'first' : first.length < second.length ? 'second' : 'tie');
    const summary = summarize(judgeAll(pairs, longer));
    expect(summary.counts).toEqual({ win: 14, tie: 2, loss: 4 });
    expect(summary.rates).toEqual({ win: 0.7, tie: 0.1, loss: 0.2 });
    expect(summary.position_consistency).toBe(1);
    expect(summary.flipped).toEqual([]);
    expect(summary.win_share).toBeCloseTo(14 / 18);
    const [low, high] = summary.interval;
    expect(low).toBeCloseTo(0.5479, 3); // Wilson 95% for 14 of 18
    expect(high).toBeCloseTo(0.9099, 3);
    expect(summary.winner).toBe('A');
  });

  it('declares no winner while the interval holds 0.5, and B when it lies below', () => {
    const judgements = (wins: number, losses: number): PairJudgement[] => [
      ...Array.from({ length: wins }, (_, i): PairJudgement => ({ index: i, aFirst: 'first', bFirst: 'second' })),
      ...Array.from({ length: losses }, (_, i): PairJudgement => ({ index: wins + i, aFirst: 'second', bFirst: 'first' })),
    ];
    expect(summarize(judgements(6, 4)).winner).toBeNull(); // 0.6 of 10: [0.313, 0.832]
    expect(summarize(judgements(2, 18)).winner).toBe('B');
    expect(wilsonInterval(6, 10)[0]).toBeCloseTo(0.3127, 3);
    expect(wilsonInterval(0, 0)).toEqual([0, 1]);
  });

  it('reads the verdict a reply names, and none from a reply that names none', () => {
    expect(readVerdict('Answer 2')).toBe('second');
    expect(readVerdict('I think answer 1 is better, not Answer 2.')).toBe('first');
    expect(readVerdict('TIE')).toBe('tie');
    expect(readVerdict('Both are fine.')).toBeNull();
    const unreadable = summarize([{ index: 0, aFirst: null, bFirst: 'second' }]);
    expect(unreadable.unreadable).toEqual([0]);
    expect(unreadable.counts.tie + unreadable.counts.win).toBe(1);
    expect(judgeMessages('2+2?', '4', '5')[1]!.content).toContain('[Answer 1]\n4\n[End of answer 1]');
  });
});
