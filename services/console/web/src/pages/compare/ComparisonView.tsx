// A finished pairwise comparison: A's wins, ties and losses against B, its share of the decided pairs with the 95%
// interval, how often the judge kept its verdict when the answers swapped places, the winner when the interval allows
// one, and every pair's answers and verdicts (the pairs whose verdict followed the position marked).
import { Badge, Card, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import type { Comparison, TrainingJob } from '../../api/types.ts';
import { formatDuration, formatPercent, formatTime, plural } from '../../components/format.ts';
import { modelLabel } from '../../components/ModelPicker.tsx';
import { ScrollTable } from '../../components/ScrollTable.tsx';
import classes from './ComparePage.module.css';

type Pair = Comparison['verdicts'][number];

const text = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content));
const promptOf = (pair: Pair) => text(pair.prompt.filter((m) => m.role === 'user').at(-1)?.content ?? '');

/** Whom the judge preferred in one order, given who was shown first: A, B, a tie, or nothing it named. */
function preferred(verdict: Pair['a_first'], first: 'A' | 'B'): string {
  if (verdict === null) return 'unreadable';
  if (verdict === 'tie') return 'tie';
  return verdict === 'first' ? first : first === 'A' ? 'B' : 'A';
}

const OUTCOMES = { win: { label: 'A wins', color: 'teal' }, tie: { label: 'tie', color: 'gray' }, loss: { label: 'B wins', color: 'red' } } as const;

function winnerSentence(comparison: Comparison, a: string, b: string): string {
  if (comparison.winner === null) return 'No winner declared: the interval holds 50%';
  return `Winner: ${comparison.winner} (${comparison.winner === 'A' ? a : b}): the interval leaves 50% out`;
}

export function ComparisonView({ comparison, jobs }: { comparison: Comparison; jobs: TrainingJob[] }) {
  const a = modelLabel(comparison.model_a, jobs);
  const b = modelLabel(comparison.model_b, jobs);
  const flipped = new Set(comparison.flipped);
  const [low, high] = comparison.interval;
  return (
    <Card withBorder padding="lg" role="region" aria-label="Comparison result">
      <Stack>
        <div>
          <Title order={4}>
            A: {a} · B: {b}
          </Title>
          <Text size="sm" c="dimmed">
            {plural(comparison.pairs, 'pair')} of the {comparison.split} split of {comparison.dataset_id}, judged by {comparison.judge.model} in both orders · took{' '}
            {formatDuration(comparison.elapsed_seconds)} · {formatTime(comparison.created_at)}
          </Text>
        </div>
        <Text fw={700} data-testid="comparison-winner">
          {winnerSentence(comparison, a, b)}
        </Text>
        <SimpleGrid cols={{ base: 2, sm: 3, lg: 6 }} data-testid="comparison-summary">
          <Stat label="A wins" value={`${comparison.counts.win} (${formatPercent(comparison.rates.win)})`} />
          <Stat label="ties" value={`${comparison.counts.tie} (${formatPercent(comparison.rates.tie)})`} />
          <Stat label="A loses" value={`${comparison.counts.loss} (${formatPercent(comparison.rates.loss)})`} />
          <Stat label="A’s share of decided pairs" value={formatPercent(comparison.win_share)} detail={`95% interval ${formatPercent(low)} – ${formatPercent(high)}`} />
          <Stat label="position consistency" value={formatPercent(comparison.position_consistency)} detail="verdicts that survived the swap" />
          <Stat label="flipped pairs" value={String(comparison.flipped.length)} detail={comparison.unreadable.length ? `${plural(comparison.unreadable.length, 'pair')} unreadable` : undefined} />
        </SimpleGrid>
        {comparison.warnings.map((warning, i) => (
          <Text key={i} size="sm" c="orange">
            {warning}
          </Text>
        ))}
        <ScrollTable label="Verdicts" minWidth={860} fz="sm" headers={['#', 'Prompt', 'A’s answer', 'B’s answer', 'Verdict, A first', 'Verdict, B first', 'Outcome']}>
          {comparison.verdicts.map((pair) => {
            const outcome = OUTCOMES[pair.outcome];
            const isFlipped = flipped.has(pair.sample_index);
            return (
              <Table.Tr key={pair.sample_index} className={isFlipped ? classes.flipped : undefined} data-flipped={isFlipped || undefined}>
                <Table.Td>{pair.sample_index}</Table.Td>
                <Table.Td className={classes.text}>{promptOf(pair)}</Table.Td>
                <Table.Td className={classes.text} data-column="answer-a">
                  {pair.answer_a}
                </Table.Td>
                <Table.Td className={classes.text} data-column="answer-b">
                  {pair.answer_b}
                </Table.Td>
                <Verdict verdict={preferred(pair.a_first, 'A')} reply={pair.reply_a_first} />
                <Verdict verdict={preferred(pair.b_first, 'B')} reply={pair.reply_b_first} />
                <Table.Td data-column="outcome">
                  <Badge color={outcome.color} variant="light">
                    {outcome.label}
                  </Badge>
                  {isFlipped && (
                    <Badge color="yellow" variant="outline" ml={4}>
                      flipped
                    </Badge>
                  )}
                </Table.Td>
              </Table.Tr>
            );
          })}
        </ScrollTable>
        <Text size="xs" c="dimmed">
          Each pair was judged twice, with A’s answer shown first and with B’s. A flipped pair’s verdict followed the position, so it counts as a tie; so
          does a reply that names no answer (unreadable).
        </Text>
      </Stack>
    </Card>
  );
}

/** One order's verdict, with the judge's reply as it wrote it under it. */
function Verdict({ verdict, reply }: { verdict: string; reply: string }) {
  return (
    <Table.Td>
      <Text size="sm" fw={600}>
        {verdict}
      </Text>
      <Text size="xs" c="dimmed" lineClamp={2} title={reply}>
        {reply}
      </Text>
    </Table.Td>
  );
}

function Stat({ label, value, detail }: { label: string; value: string; detail?: string | undefined }) {
  return (
    <Card withBorder padding="xs">
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text fw={600} data-stat={label}>
        {value}
      </Text>
      {detail && (
        <Text size="xs" c="dimmed">
          {detail}
        </Text>
      )}
    </Card>
  );
}
