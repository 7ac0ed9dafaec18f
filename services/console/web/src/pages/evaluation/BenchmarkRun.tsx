// One evaluation with benchmarks, opened: the model and what ran on it, its status, why it failed, its numbers (the
// base model's beside them with with_base) and its log as it grows.
import { Card, Group, ScrollArea, Stack, Table, Text, Title } from '@mantine/core';
import type { EvaluationLogLine } from '../../api/evaluation-events.ts';
import type { Evaluation, TrainingJob } from '../../api/types.ts';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatClock, formatDuration, formatTime, plural, runSeconds } from '../../components/format.ts';
import { modelLabel } from '../../components/ModelPicker.tsx';
import { ScrollTable } from '../../components/ScrollTable.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { resultRows } from './benchmark-rows.ts';

const LEVEL_COLORS: Partial<Record<EvaluationLogLine['level'], string>> = { error: 'red', warning: 'orange', debug: 'dimmed' };

export function BenchmarkRun({ evaluation, log, jobs }: { evaluation: Evaluation; log: EvaluationLogLine[]; jobs: TrainingJob[] }) {
  const rows = resultRows(evaluation);
  const withBase = evaluation.base_results !== null;
  const { tasks, humaneval } = evaluation.request.benchmarks ?? {};
  return (
    <Card withBorder padding="lg" role="region" aria-label="Benchmark run">
      <Stack>
        <div>
          <Group gap="sm">
            <Title order={4}>{modelLabel(evaluation, jobs)}</Title>
            <StatusBadge status={evaluation.status} />
          </Group>
          <Text size="sm" c="dimmed">
            {[...(tasks ?? []), ...(humaneval ? [`humaneval (${humaneval.limit ? plural(humaneval.limit, 'problem') : 'all problems'})`] : [])].join(', ')}
            {evaluation.request.with_base ? ` · beside ${evaluation.base_model_id}` : ''} · created {formatTime(evaluation.created_at)}
            {evaluation.finished_at ? ` · ran for ${formatDuration(runSeconds(evaluation))}` : ''}
          </Text>
        </div>
        <ErrorAlert message={evaluation.error ?? undefined} title="The benchmarks failed" />
        {evaluation.status === 'queued' && <Text c="dimmed">Waiting for a worker that serves the benchmark queue.</Text>}
        {rows.length > 0 && (
          <ScrollTable label="Benchmark results" minWidth={300} fz="sm" headers={['Task', 'Metric', 'Value', ...(withBase ? ['Base'] : [])]}>
            {rows.map((row) => (
              <Table.Tr key={`${row.task} ${row.metric}`}>
                <Table.Td>{row.task}</Table.Td>
                <Table.Td>{row.metric}</Table.Td>
                <Table.Td fw={600} data-column="value">
                  {row.value}
                </Table.Td>
                {withBase && <Table.Td data-column="base">{row.base}</Table.Td>}
              </Table.Tr>
            ))}
          </ScrollTable>
        )}
        {log.length > 0 && (
          <ScrollArea.Autosize mah={220} type="auto">
            <Stack gap={2} component="ol" style={{ listStyle: 'none', padding: 0, margin: 0 }} aria-label="Benchmark log">
              {log.map((line, i) => (
                <Text key={i} component="li" size="xs" ff="monospace" c={LEVEL_COLORS[line.level]}>
                  <Text component="time" dateTime={line.at} inherit c="dimmed" mr="xs">
                    {formatClock(line.at)}
                  </Text>
                  {line.model === 'base' ? '[base] ' : ''}
                  {line.message}
                </Text>
              ))}
            </Stack>
          </ScrollArea.Autosize>
        )}
      </Stack>
    </Card>
  );
}
