// One sweep, polled while it runs: its settings, its trials (each a training job) with their values and objective, the
// objective over the trials and each setting against it; cancel while it runs, delete (with its trials' jobs) once ended.
import { useState } from 'react';
import { Anchor, Badge, Card, Group, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { Link, useLocation } from 'wouter';
import { api, request } from '../../api/client.ts';
import type { Sweep } from '../../api/types.ts';
import { useEvery, useLoad } from '../../api/use-load.ts';
import { ConfirmButton } from '../../components/ConfirmButton.tsx';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatNumber, formatTime, plural } from '../../components/format.ts';
import { ScrollTable } from '../../components/ScrollTable.tsx';
import { Stat } from '../../components/Stat.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { ObjectiveChart, SettingScatters } from './SweepCharts.tsx';
import { ACTIVE, shortPath, trialsDone } from './SweepsPage.tsx';

export function SweepPage({ id }: { id: string }) {
  const [, navigate] = useLocation();
  const path = `/sweeps/${encodeURIComponent(id)}`;
  const loaded = useLoad((signal) => api<Sweep>('training', path, { signal }), [path]);
  const [actionError, setActionError] = useState<string>();
  const sweep = loaded.data;
  const active = sweep ? ACTIVE.includes(sweep.status) : false;
  const { reload } = loaded;
  useEvery(2000, active, reload);

  // The action's refusal (409: already ended, or a trial's job is busy) is shown, not thrown at the dialog.
  const act = (method: 'POST' | 'DELETE', then: () => void) => async () => {
    setActionError(undefined);
    try {
      await request('training', method === 'POST' ? `${path}/cancel` : path, { method });
      then();
    } catch (err) {
      setActionError((err as Error).message);
    }
  };

  return (
    <Stack>
      <Anchor component={Link} href="/sweeps" size="sm">
        ← Sweeps
      </Anchor>
      <ErrorAlert message={loaded.error} />
      {sweep && (
        <>
          <Group justify="space-between" wrap="wrap">
            <Group gap="sm">
              <Title order={2}>{sweep.name}</Title>
              <StatusBadge status={sweep.status} />
            </Group>
            {active ? (
              <ConfirmButton color="orange" question="Cancel this sweep? Its running trials are cancelled; the completed ones are kept." confirmLabel="Cancel sweep" onConfirm={act('POST', reload)}>
                Cancel
              </ConfirmButton>
            ) : (
              <ConfirmButton question="Delete this sweep with its trials’ jobs, their models, checkpoints and exports?" confirmLabel="Delete sweep" onConfirm={act('DELETE', () => navigate('/sweeps'))}>
                Delete
              </ConfirmButton>
            )}
          </Group>
          <Text size="sm" c="dimmed" data-testid="sweep-settings">
            {sweep.objective.direction} {sweep.objective.metric} · sampler {sweep.sampler} · pruner {sweep.pruner} ({plural(sweep.startup_trials, 'startup trial')}) · seed {sweep.seed} · budget{' '}
            {plural(sweep.budget.trials, 'trial')}, {sweep.budget.parallel} at once · created {formatTime(sweep.created_at)}
          </Text>
          <ErrorAlert message={sweep.error ?? undefined} title="The sweep failed" />
          <ErrorAlert message={actionError} />
          <SimpleGrid cols={{ base: 2, sm: 4 }} data-testid="sweep-stats">
            <Stat label="trials done" value={`${trialsDone(sweep)} / ${sweep.budget.trials}`} />
            <Stat label="running" value={String(sweep.trials.filter((t) => t.state === 'running').length)} />
            <Stat label="pruned" value={String(sweep.trials.filter((t) => t.state === 'pruned').length)} />
            <Stat label={`best ${sweep.objective.metric}`} value={formatNumber(sweep.best_value)} />
          </SimpleGrid>
          <Title order={3} size="h4">
            Trials
          </Title>
          <TrialsTable sweep={sweep} />
          <Title order={3} size="h4">
            Objective over trials
          </Title>
          <Card withBorder>
            <ObjectiveChart sweep={sweep} />
          </Card>
          <Title order={3} size="h4">
            Settings against the objective
          </Title>
          <SettingScatters sweep={sweep} />
        </>
      )}
    </Stack>
  );
}

function TrialsTable({ sweep }: { sweep: Sweep }) {
  const paths = Object.keys(sweep.space);
  if (sweep.trials.length === 0) return <Text c="dimmed">No trial yet: the first ones start when a worker takes the sweep.</Text>;
  return (
    <ScrollTable label="Trials" minWidth={560 + 100 * paths.length} headers={['#', 'Job', 'State', ...paths.map(shortPath), sweep.objective.metric, 'Why']}>
      {sweep.trials.map((trial) => {
        const best = trial.job_id !== null && trial.job_id === sweep.best_job_id;
        return (
          <Table.Tr key={trial.trial} data-best={best || undefined} data-state={trial.state}>
            <Table.Td>{trial.trial}</Table.Td>
            <Table.Td>
              {trial.job_id ? (
                <Anchor component={Link} href={`/training/${trial.job_id}`}>
                  {trial.job_id}
                </Anchor>
              ) : (
                '—'
              )}
            </Table.Td>
            <Table.Td>
              <StatusBadge status={trial.state} />
            </Table.Td>
            {paths.map((p) => (
              <Table.Td key={p}>{formatNumber(trial.params[p], 3)}</Table.Td>
            ))}
            <Table.Td>
              <Group gap={6} wrap="nowrap">
                {formatNumber(trial.value)}
                {best && (
                  <Badge size="sm" color="orange" data-testid="best">
                    best
                  </Badge>
                )}
              </Group>
            </Table.Td>
            <Table.Td>
              <Text size="xs" c="dimmed">
                {trial.error ?? ''}
              </Text>
            </Table.Td>
          </Table.Tr>
        );
      })}
    </ScrollTable>
  );
}
