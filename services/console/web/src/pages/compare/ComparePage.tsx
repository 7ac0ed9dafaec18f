// Compare jobs: their loss curves overlaid on one step axis, and a table of what they were (their training_config,
// every hyperparameter, and what the pre-flight report counted) and what they reached, with the rows where they
// differ highlighted. Below, two models judged by an LLM on a dataset's prompts (JudgeSection.tsx).
import { useEffect, useMemo, useState } from 'react';
import { Card, Divider, MultiSelect, ScrollArea, Stack, Table, Text, Title } from '@mantine/core';
import { api } from '../../api/client.ts';
import { followJobEvents } from '../../api/job-events.ts';
import { emptyHistory, lossSeries, type JobHistory } from '../../api/job-history.ts';
import type { JobList, TrainingJob } from '../../api/types.ts';
import { useLoad } from '../../api/use-load.ts';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatNumber } from '../../components/format.ts';
import { TimeSeriesChart } from '../../components/TimeSeriesChart.tsx';
import classes from './ComparePage.module.css';
import { JudgeSection } from './JudgeSection.tsx';

const COLORS = ['#4c6ef5', '#e8590c', '#2f9e44', '#ae3ec9', '#1098ad', '#f08c00'];

export function ComparePage() {
  const jobs = useLoad((signal) => api<JobList>('training', '/jobs', { signal }), []);
  const [chosen, setChosen] = useState<string[]>([]);
  const [histories, setHistories] = useState<Record<string, JobHistory>>({});
  const [error, setError] = useState<string>();

  useEffect(() => {
    const controller = new AbortController();
    for (const id of chosen) {
      followJobEvents(id, controller.signal, (history) => setHistories((all) => ({ ...all, [id]: history }))).catch((err: Error) => setError(err.message));
    }
    return () => controller.abort();
  }, [chosen]);

  const selected = (jobs.data?.jobs ?? []).filter((j) => chosen.includes(j.job_id));
  const chart = useMemo(() => overlay(selected.map((j) => histories[j.job_id] ?? emptyHistory())), [selected, histories]);

  return (
    <Stack>
      <Title order={2}>Compare</Title>
      <Title order={3}>Jobs side by side</Title>
      <ErrorAlert message={jobs.error ?? error} />
      <MultiSelect
        label="Jobs"
        description="two or more"
        data={(jobs.data?.jobs ?? []).map((j) => ({ value: j.job_id, label: `${j.job_name} (${j.status})` }))}
        value={chosen}
        onChange={setChosen}
        searchable
        clearable
      />
      {selected.length < 2 && <Text c="dimmed">Choose at least two jobs.</Text>}
      {selected.length >= 2 && (
        <>
          <Card withBorder>
            <TimeSeriesChart title="Train loss" testId="compare-chart" series={selected.map((j, i) => ({ label: j.job_name, color: COLORS[i % COLORS.length]! }))} data={chart} />
          </Card>
          <Card withBorder>
            <ScrollArea type="auto">
              <Table aria-label="Jobs compared" fz="sm" miw={480}>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th />
                    {selected.map((j) => (
                      <Table.Th key={j.job_id}>{j.job_name}</Table.Th>
                    ))}
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {[...configRows(selected), ...ROWS].map(([label, value]) => {
                    const cells = selected.map((j) => value(j, histories[j.job_id] ?? emptyHistory()));
                    const differs = new Set(cells).size > 1;
                    return (
                      <Table.Tr key={label} className={differs ? classes.differs : undefined} data-differs={differs || undefined}>
                        <Table.Th>{label}</Table.Th>
                        {cells.map((cell, i) => (
                          <Table.Td key={i}>{cell}</Table.Td>
                        ))}
                      </Table.Tr>
                    );
                  })}
                </Table.Tbody>
              </Table>
            </ScrollArea>
            <Text size="xs" c="dimmed" mt="xs">
              Highlighted rows differ between the jobs.
            </Text>
          </Card>
        </>
      )}
      <Divider my="md" />
      <JudgeSection jobs={jobs.data?.jobs ?? []} />
    </Stack>
  );
}

/** Each job's train loss on the union of their steps. */
function overlay(histories: JobHistory[]): [number[], ...Array<Array<number | null>>] {
  const series = histories.map((h) => {
    const [steps, loss] = lossSeries(h);
    return new Map(steps.map((s, i) => [s, loss[i] ?? null]));
  });
  const steps = [...new Set(series.flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
  return [steps, ...series.map((m) => steps.map((s) => m.get(s) ?? null))];
}

const lastLoss = (h: JobHistory) => [...h.progress].reverse().find((p) => p.loss !== null)?.loss;
const meanSpeed = (h: JobHistory) => {
  const speeds = h.progress.flatMap((p) => (p.tokens_per_second === null ? [] : [p.tokens_per_second]));
  return speeds.length ? speeds.reduce((a, b) => a + b, 0) / speeds.length : undefined;
};

type Row = [string, (job: TrainingJob, history: JobHistory) => string];

const shown = (value: unknown): string => (value === undefined || value === null ? '—' : typeof value === 'object' ? JSON.stringify(value) : String(value));

/** training_config as flat settings: hyperparameters by their own name, other groups as group.name. */
function flatSettings(config: Record<string, unknown>): Record<string, unknown> {
  const flat: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) flat[key] = value;
    else for (const [inner, v] of Object.entries(value)) flat[key === 'hyperparameters' ? inner : `${key}.${inner}`] = v;
  }
  return flat;
}

/** One row per training_config setting any of the jobs has, in a stable order. */
function configRows(jobs: TrainingJob[]): Row[] {
  const settings = (j: TrainingJob) => flatSettings(j.training_config);
  const keys = [...new Set(jobs.flatMap((j) => Object.keys(settings(j))))].sort();
  return keys.map((key): Row => [key, (j) => shown(settings(j)[key])]);
}

const ROWS: Row[] = [
  ['status', (j) => j.status],
  ['base model', (j) => j.base_model_id],
  ['dataset', (j) => j.processed_dataset_id ?? '—'],
  ['effective batch', (j) => formatNumber(j.preflight?.steps.effective_batch_size)],
  ['steps', (j) => formatNumber(j.preflight?.steps.total)],
  ['train examples', (j) => formatNumber(j.preflight?.examples.train)],
  ['training tokens', (j) => formatNumber(j.preflight?.training_tokens)],
  ['trainable parameters', (j) => formatNumber(j.preflight?.model.trainable_parameters)],
  ['final train loss', (_j, h) => formatNumber(lastLoss(h))],
  ['eval_loss', (j) => formatNumber(j.metrics?.eval_loss)],
  ['perplexity', (j) => formatNumber(j.metrics?.perplexity)],
  ['accuracy', (j) => formatNumber(j.metrics?.accuracy)],
  ['eval_runtime (s)', (j) => formatNumber(j.metrics?.eval_runtime, 2)],
  ['mean tokens/s', (_j, h) => formatNumber(meanSpeed(h), 1)],
];
