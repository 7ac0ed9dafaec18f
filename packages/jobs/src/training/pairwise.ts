// Pairwise judging that controls for position (#61): each pair of answers (model A's, model B's to one prompt) is put
// to the judge twice, A first and then B first; a verdict that follows the position rather than the answer does not
// survive the swap and counts as a tie. What the comparison reports is computed here, from the verdicts alone: win,
// tie and loss counts and rates of A, the judge's position consistency, the pairs it flipped on, and A's share of the
// decisive pairs with a Wilson 95% interval; a winner only when that interval leaves 0.5 out.

/** The judge's answer to one ordering: which position it preferred (first, second) or a tie; null when its reply
 *  named none of them (counted as a tie, and listed). */
export type PositionVerdict = 'first' | 'second' | 'tie' | null;

/** One pair's two judgements: `aFirst` with A's answer in the first position, `bFirst` with B's. */
export interface PairJudgement {
  index: number;
  aFirst: PositionVerdict;
  bFirst: PositionVerdict;
}

export type Outcome = 'win' | 'tie' | 'loss';

export interface ComparisonSummary {
  pairs: number;
  /** A's outcomes against B after both orders. */
  counts: Record<Outcome, number>;
  rates: Record<Outcome, number>;
  /** A's share of the pairs with a winner (wins / (wins + losses)), null when none had one, with its Wilson 95% interval. */
  win_share: number | null;
  interval: [number, number];
  /** The share of pairs whose verdict survived the swap (the same model, or a tie, preferred in both orders). */
  position_consistency: number;
  /** The pairs whose verdict followed the position (counted as ties). */
  flipped: number[];
  /** The pairs where a reply named no verdict. */
  unreadable: number[];
  /** 'A' or 'B' when the interval leaves 0.5 out; null while it holds 0.5. */
  winner: 'A' | 'B' | null;
}

const Z95 = 1.959963984540054;

/** What A got from one pair: the verdict of both orders when they agree, a tie when they do not. */
export function outcomeOf(judgement: PairJudgement): { outcome: Outcome; consistent: boolean } {
  const inA = (verdict: PositionVerdict, aPosition: 'first' | 'second'): Outcome =>
    verdict === null || verdict === 'tie' ? 'tie' : verdict === aPosition ? 'win' : 'loss';
  const forward = inA(judgement.aFirst, 'first');
  const swapped = inA(judgement.bFirst, 'second');
  return forward === swapped ? { outcome: forward, consistent: true } : { outcome: 'tie', consistent: false };
}

/** Wilson's score interval at 95% for `successes` of `trials` ([0, 1] when there were none). */
export function wilsonInterval(successes: number, trials: number): [number, number] {
  if (trials === 0) return [0, 1];
  const p = successes / trials;
  const z2 = Z95 * Z95;
  const centre = (p + z2 / (2 * trials)) / (1 + z2 / trials);
  const half = (Z95 * Math.sqrt((p * (1 - p)) / trials + z2 / (4 * trials * trials))) / (1 + z2 / trials);
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

export function summarize(judgements: readonly PairJudgement[]): ComparisonSummary {
  const counts: Record<Outcome, number> = { win: 0, tie: 0, loss: 0 };
  const flipped: number[] = [];
  const unreadable: number[] = [];
  let consistent = 0;
  for (const judgement of judgements) {
    const { outcome, consistent: survived } = outcomeOf(judgement);
    counts[outcome] += 1;
    if (survived) consistent += 1;
    else flipped.push(judgement.index);
    if (judgement.aFirst === null || judgement.bFirst === null) unreadable.push(judgement.index);
  }
  const pairs = judgements.length;
  const decisive = counts.win + counts.loss;
  const interval = wilsonInterval(counts.win, decisive);
  const rate = (n: number) => (pairs === 0 ? 0 : n / pairs);
  return {
    pairs,
    counts,
    rates: { win: rate(counts.win), tie: rate(counts.tie), loss: rate(counts.loss) },
    win_share: decisive === 0 ? null : counts.win / decisive,
    interval,
    position_consistency: rate(consistent),
    flipped,
    unreadable,
    winner: interval[0] > 0.5 ? 'A' : interval[1] < 0.5 ? 'B' : null,
  };
}

/** The judge's messages for one ordering: the prompt, the two answers in their positions, and how to reply. */
export function judgeMessages(prompt: string, first: string, second: string, criteria?: string): Array<{ role: 'system' | 'user'; content: string }> {
  return [
    {
      role: 'system',
      content:
        'You compare two answers to the same request and say which is better' +
        (criteria ? `, judged by this: ${criteria}` : ' (correct, helpful, clear)') +
        '. Their order says nothing about their quality. Reply with exactly one of: "Answer 1", "Answer 2" or "Tie".',
    },
    { role: 'user', content: `Request:\n${prompt}\n\n[Answer 1]\n${first}\n[End of answer 1]\n\n[Answer 2]\n${second}\n[End of answer 2]\n\nWhich answer is better?` },
  ];
}

/** The position a judge's reply names: its first "Answer 1", "Answer 2" or "Tie"; null when it names none. */
export function readVerdict(reply: string): PositionVerdict {
  const found = /\b(answer\s*1|answer\s*2|tie)\b/i.exec(reply);
  if (!found) return null;
  const said = found[1]!.toLowerCase().replace(/\s+/g, '');
  return said === 'answer1' ? 'first' : said === 'answer2' ? 'second' : 'tie';
}
