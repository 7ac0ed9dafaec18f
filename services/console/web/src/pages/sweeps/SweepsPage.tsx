// The caller's hyperparameter sweeps, newest first: status, trials done of the budget and the best trial so far. The
// console shows sweeps; they are started with `ftune sweep create` or POST /sweeps.
import { Anchor, Card, Code, Stack, Table, Text, Title } from '@mantine/core';
import { Link } from 'wouter';
import { api } from '../../api/client.ts';
import type { Sweep, SweepList } from '../../api/types.ts';
import { useEvery, useLoad } from '../../api/use-load.ts';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatNumber, formatTime } from '../../components/format.ts';
import { ScrollTable } from '../../components/ScrollTable.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';

export const ACTIVE: readonly string[] = ['queued', 'running'];

/** Trials that have ended (completed, pruned or failed). */
export const trialsDone = (sweep: Sweep): number => sweep.trials.filter((trial) => trial.state !== 'running').length;

/** A searched path as people name it: `hyperparameters.learning_rate` → `learning_rate`. */
export const shortPath = (path: string): string => path.replace(/^hyperparameters\./, '');

export function SweepsPage() {
  const list = useLoad((signal) => api<SweepList>('training', '/sweeps', { signal }), []);
  const active = list.data?.sweeps.some((sweep) => ACTIVE.includes(sweep.status)) ?? false;
  // While any sweep runs, the list is looked at again every few seconds.
  useEvery(3000, active, list.reload);

  return (
    <Stack>
      <Title order={2}>Sweeps</Title>
      <ErrorAlert message={list.error} />
      <Card withBorder padding="lg">
        {list.data?.sweeps.length === 0 && (
          <Text c="dimmed">
            No sweeps yet. Start one with <Code>ftune sweep create --dataset … --model … --search learning_rate=float:1e-5:1e-3:log</Code> or POST
            /sweeps to the training service; its trials are training jobs.
          </Text>
        )}
        {list.data && list.data.sweeps.length > 0 && (
          <ScrollTable label="Sweeps" minWidth={640} highlightOnHover headers={['Sweep', 'Status', 'Trials', 'Best', 'Created']}>
            {list.data.sweeps.map((sweep) => (
              <Table.Tr key={sweep.sweep_id}>
                <Table.Td>
                  <Anchor component={Link} href={`/sweeps/${sweep.sweep_id}`}>
                    {sweep.name}
                  </Anchor>
                </Table.Td>
                <Table.Td>
                  <StatusBadge status={sweep.status} />
                </Table.Td>
                <Table.Td>
                  {trialsDone(sweep)} / {sweep.budget.trials}
                </Table.Td>
                <Table.Td>
                  {sweep.best_job_id ? (
                    <>
                      <Anchor component={Link} href={`/training/${sweep.best_job_id}`}>
                        {sweep.best_job_id}
                      </Anchor>{' '}
                      <Text span size="sm" c="dimmed">
                        {sweep.objective.metric} {formatNumber(sweep.best_value)}
                      </Text>
                    </>
                  ) : (
                    '—'
                  )}
                </Table.Td>
                <Table.Td>{formatTime(sweep.created_at)}</Table.Td>
              </Table.Tr>
            ))}
          </ScrollTable>
        )}
      </Card>
    </Stack>
  );
}
