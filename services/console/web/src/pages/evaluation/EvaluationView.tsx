// An evaluation's outcome: its metrics and the per-sample table of prompt, reference and prediction. When the base
// model was evaluated on the same samples too, both side by side: each metric for base and tuned with the change,
// and the base's prediction next to the tuned one's for each sample.
import { Card, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import type { EvaluationResult } from '../../api/types.ts';
import { formatNumber, plural } from '../../components/format.ts';
import { ScrollTable } from '../../components/ScrollTable.tsx';

export interface EvaluationRun {
  /** What was evaluated, as the page names it (e.g. “tuned (adapter)”, “base”). */
  label: string;
  result: EvaluationResult;
}

function flatMetrics(metrics: EvaluationResult['metrics']): Array<[string, number]> {
  return Object.entries(metrics).flatMap(([name, value]) => (typeof value === 'number' ? [[name, value] as [string, number]] : Object.entries(value).map(([sub, v]) => [`${name}.${sub}`, v] as [string, number])));
}

const text = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content));
const promptOf = (sample: EvaluationResult['samples'][number]) => text(sample.input.filter((m) => m.role === 'user').at(-1)?.content ?? '');

/** `tuned` alone, or `tuned` beside `base` when the base model was evaluated on the same dataset. */
export function EvaluationView({ tuned, base }: { tuned: EvaluationRun; base?: EvaluationRun | undefined }) {
  const runs = base ? [base, tuned] : [tuned];
  return (
    <Card withBorder padding="lg" role="region" aria-label="Evaluation result">
      <Stack>
        <Title order={3} size="h4">
          {plural(tuned.result.num_samples, 'sample')} scored{base ? `: ${base.label} beside ${tuned.label}` : ''}
        </Title>
        {runs.flatMap((run) =>
          run.result.warnings.map((w, i) => (
            <Text key={`${run.label}-${i}`} size="sm" c="orange">
              {base ? `${run.label}: ` : ''}
              {typeof w === 'string' ? w : `${w.metric}: ${w.error}`}
            </Text>
          )),
        )}
        {base ? <MetricsCompared base={base} tuned={tuned} /> : <MetricCards result={tuned.result} />}
        {tuned.result.notes?.map((n, i) => (
          <Text key={i} size="xs" c="dimmed">
            {n.metric}: {n.note}
          </Text>
        ))}
        {base ? <SamplesCompared base={base} tuned={tuned} /> : <Samples result={tuned.result} />}
      </Stack>
    </Card>
  );
}

function MetricCards({ result }: { result: EvaluationResult }) {
  return (
    <SimpleGrid cols={{ base: 2, sm: 4 }} data-testid="evaluation-metrics">
      {flatMetrics(result.metrics).map(([name, value]) => (
        <Card key={name} withBorder padding="xs">
          <Text size="xs" c="dimmed">
            {name}
          </Text>
          <Text fw={600}>{formatNumber(value)}</Text>
        </Card>
      ))}
    </SimpleGrid>
  );
}

function MetricsCompared({ base, tuned }: { base: EvaluationRun; tuned: EvaluationRun }) {
  const baseValues = new Map(flatMetrics(base.result.metrics));
  const rows = flatMetrics(tuned.result.metrics);
  return (
    <div data-testid="evaluation-metrics">
      <ScrollTable label="Metrics compared" minWidth={360} fz="sm" headers={['Metric', base.label, tuned.label, 'Change']}>
        {rows.map(([name, value]) => {
          const before = baseValues.get(name);
          const change = before === undefined ? undefined : value - before;
          return (
            <Table.Tr key={name}>
              <Table.Th>{name}</Table.Th>
              <Table.Td>{formatNumber(before)}</Table.Td>
              <Table.Td fw={600}>{formatNumber(value)}</Table.Td>
              <Table.Td c={change === undefined || change === 0 ? 'dimmed' : change > 0 ? 'teal' : 'red'}>{change === undefined ? '—' : `${change > 0 ? '+' : ''}${formatNumber(change)}`}</Table.Td>
            </Table.Tr>
          );
        })}
      </ScrollTable>
    </div>
  );
}

/** A prediction, with its graders' scores under it when graders ran. */
function Prediction({ sample }: { sample?: EvaluationResult['samples'][number] }) {
  if (!sample) return <>—</>;
  const grades = Object.entries(sample.grades ?? {});
  return (
    <>
      {sample.prediction}
      {grades.length > 0 && (
        <Text size="xs" c="dimmed" data-testid="grades">
          {grades.map(([name, score]) => `${name} ${formatNumber(score)}`).join(' · ')}
        </Text>
      )}
    </>
  );
}

function Samples({ result }: { result: EvaluationResult }) {
  return (
    <ScrollTable label="Per-sample results" minWidth={600} striped fz="sm" headers={['#', 'Prompt', 'Reference', 'Prediction']}>
      {result.samples.map((sample) => (
        <Table.Tr key={sample.sample_index}>
          <Table.Td>{sample.sample_index}</Table.Td>
          <Table.Td>{promptOf(sample)}</Table.Td>
          <Table.Td>{sample.reference}</Table.Td>
          <Table.Td>
            <Prediction sample={sample} />
          </Table.Td>
        </Table.Tr>
      ))}
    </ScrollTable>
  );
}

/** The samples both runs returned, matched by their index in the dataset. */
function SamplesCompared({ base, tuned }: { base: EvaluationRun; tuned: EvaluationRun }) {
  const baseSamples = new Map(base.result.samples.map((s) => [s.sample_index, s]));
  return (
    <ScrollTable label="Per-sample results" minWidth={760} striped fz="sm" headers={['#', 'Prompt', 'Reference', `Prediction: ${base.label}`, `Prediction: ${tuned.label}`]}>
      {tuned.result.samples.map((sample) => (
        <Table.Tr key={sample.sample_index}>
          <Table.Td>{sample.sample_index}</Table.Td>
          <Table.Td>{promptOf(sample)}</Table.Td>
          <Table.Td>{sample.reference}</Table.Td>
          <Table.Td data-column="base">
            <Prediction sample={baseSamples.get(sample.sample_index)} />
          </Table.Td>
          <Table.Td data-column="tuned">
            <Prediction sample={sample} />
          </Table.Td>
        </Table.Tr>
      ))}
    </ScrollTable>
  );
}
