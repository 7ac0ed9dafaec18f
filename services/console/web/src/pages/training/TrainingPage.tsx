// Training jobs, newest first, with their status and progress; new jobs start from here.
import { Anchor, Badge, Button, Card, Group, Progress, Stack, Table, Text, Title } from '@mantine/core';
import { Link } from 'wouter';
import { api } from '../../api/client.ts';
import type { JobList, TrainingJob } from '../../api/types.ts';
import { useEvery, useLoad } from '../../api/use-load.ts';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatNumber, formatTime } from '../../components/format.ts';
import { ScrollTable } from '../../components/ScrollTable.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { jobDisplayName, runStatusLabel } from './tinker-run.ts';

export const RUNNING = ['queued', 'preparing', 'training'];

/** The job's trainer_type (its config as it applied). */
export function trainerOf(job: TrainingJob | undefined): string | undefined {
  return (job?.training_config as { trainer_type?: string } | undefined)?.trainer_type;
}

export function TrainingPage() {
  const jobs = useLoad((signal) => api<JobList>('training', '/jobs', { signal }), []);
  const running = jobs.data?.jobs.some((job) => RUNNING.includes(job.status)) ?? false;
  // While any job runs, the list is looked at again every few seconds.
  useEvery(3000, running, jobs.reload);

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Training</Title>
        <Button component={Link} href="/training/new">
          New training job
        </Button>
      </Group>
      <ErrorAlert message={jobs.error} />
      <Card withBorder padding="lg">
        {jobs.data?.jobs.length === 0 && <Text c="dimmed">No jobs yet.</Text>}
        {jobs.data && jobs.data.jobs.length > 0 && (
          <ScrollTable label="Training jobs" minWidth={640} highlightOnHover headers={['Job', 'Status', 'Base model', 'Progress', 'Loss', 'Reward', 'Created']}>
                {jobs.data.jobs.map((job) => {
                  const p = job.progress;
                  const trainer = trainerOf(job);
                  const grpo = trainer === 'grpo';
                  // A Tinker run (the user's own loop, through the tinker SDK) has no end to measure against: its steps so far.
                  const tinker = trainer === 'tinker';
                  const share = p?.total_steps ? (100 * p.step) / p.total_steps : job.status === 'completed' ? 100 : 0;
                  const name = jobDisplayName(job);
                  return (
                    <Table.Tr key={job.job_id}>
                      <Table.Td>
                        <Group gap={6} wrap="nowrap">
                          <Anchor component={Link} href={`/training/${job.job_id}`}>
                            {name}
                          </Anchor>
                          {tinker && (
                            <Badge size="xs" variant="outline" tt="none" data-testid="trainer">
                              tinker
                            </Badge>
                          )}
                        </Group>
                      </Table.Td>
                      <Table.Td>
                        <StatusBadge status={runStatusLabel(job)} />
                      </Table.Td>
                      <Table.Td>{job.base_model_id}</Table.Td>
                      <Table.Td miw={120}>
                        {!tinker && <Progress value={share} aria-label={`${name} progress`} />}
                        <Text size="xs" c="dimmed">
                          {tinker ? `${p?.step ?? 0} optim step${p?.step === 1 ? '' : 's'}` : p ? `step ${p.step}${p.total_steps ? ` of ${p.total_steps}` : ''}` : '—'}
                        </Text>
                      </Table.Td>
                      {/* GRPO's loss is ~0 by construction: its figure is the reward (#39). */}
                      <Table.Td>{grpo ? '—' : formatNumber(p?.loss)}</Table.Td>
                      <Table.Td>{grpo ? formatNumber(p?.reward) : '—'}</Table.Td>
                      <Table.Td>{formatTime(job.created_at)}</Table.Td>
                    </Table.Tr>
                  );
                })}
          </ScrollTable>
        )}
      </Card>
    </Stack>
  );
}
