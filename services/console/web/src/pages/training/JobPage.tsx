// One training job, live: status, the loss / eval-loss, learning-rate and tokens/s curves as they grow, ETA, the
// event log, metrics and pre-flight report; cancel while it runs, delete once it has ended. A Tinker run: TinkerRunView.
import { useEffect, useMemo, useState } from 'react';
import { Accordion, Alert, Anchor, Button, Card, Group, List, Progress, ScrollArea, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { Link, useLocation } from 'wouter';
import { api } from '../../api/client.ts';
import { hasCurves, lossSeries, progressSeries, rewardSeries, validScoreSeries, warningsOf, type JobHistory } from '../../api/job-history.ts';
import type { JobDeleteResult, TrainingJob } from '../../api/types.ts';
import { useEvery, useLoad } from '../../api/use-load.ts';
import { ConfirmButton } from '../../components/ConfirmButton.tsx';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatClock, formatDuration, formatNumber, formatTime, plural, runSeconds } from '../../components/format.ts';
import { Stat } from '../../components/Stat.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { TimeSeriesChart } from '../../components/TimeSeriesChart.tsx';
import { PreflightView } from './PreflightView.tsx';
import { isTinkerRun } from './tinker-run.ts';
import { TinkerRunView } from './TinkerRunView.tsx';
import { RUNNING, trainerOf } from './TrainingPage.tsx';
import { useJobHistory } from './use-job-history.ts';

type JobAction = 'cancel' | 'pause' | 'resume';

export function JobPage({ id }: { id: string }) {
  const [, navigate] = useLocation();
  const loaded = useLoad((signal) => api<TrainingJob>('training', `/jobs/${encodeURIComponent(id)}`, { signal }), [id]);
  // Resumed, a paused job (whose event stream ended paused) is followed again.
  const [round, setRound] = useState(0);
  const { history, error: streamError } = useJobHistory(id, round);
  const [actionError, setActionError] = useState<string>();
  const [acting, setActing] = useState<JobAction>();

  // The stream's last event carries the final job; a status event moves the badge before it.
  const latestStatus = [...history.log].reverse().find((line) => line.kind === 'status')?.text.match(/^status (\w+)/)?.[1];
  const job = history.final ?? (loaded.data && latestStatus ? { ...loaded.data, status: latestStatus as TrainingJob['status'] } : loaded.data);
  const { reload } = loaded;
  useEffect(() => {
    if (history.final) reload();
  }, [history.final, reload]);
  // While it waits, the count of jobs ahead of it is looked at again every few seconds (a Tinker run's view looks at
  // its run itself).
  const queued = job?.status === 'queued' && !isTinkerRun(job);
  useEvery(5000, queued, reload);

  // GRPO's loss is ~0 by construction (a group's advantages sum to 0): its figure is the reward (#39).
  const grpo = trainerOf(job) === 'grpo';
  const loss = useMemo(() => (grpo ? rewardSeries(history) : lossSeries(history)), [history, grpo]);
  const validScore = useMemo(() => validScoreSeries(history), [history]);
  const learningRate = useMemo(() => progressSeries(history, 'learning_rate'), [history]);
  const speed = useMemo(() => progressSeries(history, 'tokens_per_second'), [history]);
  const last = history.progress.at(-1);
  const lastFigure = [...history.progress].reverse().find((p) => (grpo ? p.reward : p.loss) !== null);
  const running = job ? RUNNING.includes(job.status) : false;
  const warnings = useMemo(() => warningsOf(history), [history]);

  const act = async (action: JobAction) => {
    setActing(action);
    setActionError(undefined);
    try {
      await api<TrainingJob>('training', `/jobs/${encodeURIComponent(id)}/${action}`, { method: 'POST' });
      // A paused job's event stream has ended: followed again, it shows the job resumed (or cancelled).
      if (!running) setRound((r) => r + 1);
    } catch (err) {
      setActionError((err as Error).message);
    } finally {
      setActing(undefined);
    }
  };
  const remove = async () => {
    try {
      await api<JobDeleteResult>('training', `/jobs/${encodeURIComponent(id)}`, { method: 'DELETE' });
      navigate('/training');
    } catch (err) {
      setActionError((err as Error).message);
    }
  };

  // A Tinker run (the user's own training loop, on our workers) is no job to pause, resume or chart: its own view.
  if (loaded.data && isTinkerRun(loaded.data)) return <TinkerRunView run={loaded.data} error={loaded.error} reload={reload} />;

  return (
    <Stack>
      <Anchor component={Link} href="/training" size="sm">
        ← Training
      </Anchor>
      <ErrorAlert message={loaded.error} />
      {job && (
        <>
          <Group justify="space-between" wrap="wrap">
            <Group gap="sm">
              <Title order={2}>{job.job_name}</Title>
              <StatusBadge status={job.status} />
            </Group>
            <Group gap="xs">
              {job.status === 'completed' && (
                <>
                  <Button variant="light" component={Link} href={`/playground?job=${id}`}>
                    Try it
                  </Button>
                  <Button variant="light" component={Link} href={`/evaluation?job=${id}`}>
                    Evaluate
                  </Button>
                  <Button variant="light" component={Link} href={`/exports?job=${id}`}>
                    Export
                  </Button>
                </>
              )}
              {/* what it stored before it stopped can still be exported (the Exports page offers its checkpoints) */}
              {(job.status === 'failed' || job.status === 'paused') && !isTinkerRun(job) && (
                <Button variant="light" component={Link} href={`/exports?job=${id}`}>
                  Export a checkpoint
                </Button>
              )}
              {job.status === 'paused' && (
                <Button variant="light" loading={acting === 'resume'} onClick={() => void act('resume')}>
                  Resume
                </Button>
              )}
              {running && (
                <Button color="yellow" variant="light" loading={acting === 'pause'} onClick={() => void act('pause')}>
                  Pause
                </Button>
              )}
              {running || job.status === 'paused' ? (
                <Button color="orange" variant="light" loading={acting === 'cancel'} onClick={() => void act('cancel')}>
                  Cancel
                </Button>
              ) : (
                <ConfirmButton question="Delete this job with its checkpoints, model files and exports?" confirmLabel="Delete job" onConfirm={remove}>
                  Delete
                </ConfirmButton>
              )}
            </Group>
          </Group>
          <Text size="sm" c="dimmed">
            {job.base_model_id} · dataset {job.processed_dataset_id ?? '—'} · created {formatTime(job.created_at)}
            {/* The job's built-in dashboard is this page; only an outside tracker (MLflow, W&B) gets a link. */}
            {job.tracker_url && !job.tracker_url.endsWith(`/jobs/${job.job_id}/dashboard`) && (
              <>
                {' · '}
                <Anchor href={job.tracker_url} target="_blank" rel="noreferrer" size="sm">
                  tracker
                </Anchor>
              </>
            )}
          </Text>
          <ErrorAlert message={job.error ?? undefined} title="The job failed" />
          <ErrorAlert message={actionError ?? streamError} />
          <Progress value={last?.total_steps ? (100 * last.step) / last.total_steps : job.status === 'completed' ? 100 : 0} size="lg" aria-label="Training progress" animated={running} />
          <SimpleGrid cols={{ base: 2, sm: 3, md: 6 }} data-testid="job-stats">
            <Stat label="step" value={last ? `${last.step}${last.total_steps ? ` / ${last.total_steps}` : ''}` : '—'} />
            <Stat label="epoch" value={formatNumber(last?.epoch, 2)} />
            <Stat label={grpo ? 'reward' : 'loss'} value={formatNumber(grpo ? lastFigure?.reward : lastFigure?.loss)} />
            <Stat label="learning rate" value={formatNumber(last?.learning_rate, 3)} />
            <Stat label="tokens/s" value={formatNumber(last?.tokens_per_second === null || last?.tokens_per_second === undefined ? undefined : Math.round(last.tokens_per_second))} />
            {running ? <Stat label="ETA" value={formatDuration(last?.eta_seconds)} /> : <Stat label="ran for" value={formatDuration(runSeconds(job))} />}
          </SimpleGrid>
          {warnings.length > 0 && (
            <Alert color="yellow" title={warnings.length === 1 ? 'Warning' : `${warnings.length} warnings`} aria-label="Job warnings">
              <List size="sm" spacing={4}>
                {warnings.map((warning) => (
                  <List.Item key={warning}>{warning}</List.Item>
                ))}
              </List>
            </Alert>
          )}
          {hasCurves(history) ? (
            <Curves grpo={grpo} loss={loss} learningRate={learningRate} speed={speed} validScore={validScore} />
          ) : (
            <Card withBorder data-testid="no-curves">
              <Text c="dimmed">{waiting(job, history)}</Text>
            </Card>
          )}
          <Accordion variant="contained" multiple defaultValue={['events', 'metrics']}>
            <Accordion.Item value="metrics">
              <Accordion.Control>Metrics</Accordion.Control>
              <Accordion.Panel>
                <MetricsTable job={job} evals={history.evals.length} />
              </Accordion.Panel>
            </Accordion.Item>
            <Accordion.Item value="events">
              <Accordion.Control>Events ({history.log.length})</Accordion.Control>
              <Accordion.Panel>
                <ScrollArea.Autosize mah={260} type="auto">
                  <Stack gap={2} component="ol" style={{ listStyle: 'none', padding: 0, margin: 0 }} aria-label="Job events">
                    {history.log.map((line, i) => (
                      <Text key={i} component="li" size="xs" ff="monospace" c={line.level === 'error' ? 'red' : line.level === 'warning' ? 'orange' : undefined}>
                        {line.at && (
                          <Text component="time" dateTime={line.at} inherit c="dimmed" mr="xs">
                            {formatClock(line.at)}
                          </Text>
                        )}
                        {line.text}
                      </Text>
                    ))}
                  </Stack>
                </ScrollArea.Autosize>
              </Accordion.Panel>
            </Accordion.Item>
            <Accordion.Item value="preflight">
              <Accordion.Control>Pre-flight report</Accordion.Control>
              <Accordion.Panel>{job.preflight ? <PreflightView report={job.preflight} /> : <Text c="dimmed">Not made yet (the worker makes it before training).</Text>}</Accordion.Panel>
            </Accordion.Item>
          </Accordion>
        </>
      )}
    </Stack>
  );
}

/** What a job without a curve yet is doing: waiting for a worker, or preparing (with its latest word). */
function waiting(job: TrainingJob, history: JobHistory): string {
  const { status } = job;
  const latest = history.log.at(-1);
  const said = latest && latest.kind === 'log' ? ` Latest: ${latest.text}` : '';
  if (status === 'queued') {
    const ahead = job.jobs_ahead ? `${plural(job.jobs_ahead, 'job')} ahead of it` : job.jobs_ahead === 0 ? 'next in line' : '';
    return `Queued: waiting for a worker${ahead ? ` (${ahead})` : ''}. The curves start with the first training step.`;
  }
  if (status === 'preparing') return `Preparing: loading the dataset and the base model; the curves start with the first training step.${said}`;
  return 'No training step was reported.';
}

const SCORE_COLORS = ['#e8590c', '#1c7ed6', '#2f9e44', '#ae3ec9', '#f08c00', '#0c8599', '#c2255c', '#5c940d', '#495057'];

/** The loss (GRPO: reward), graders' score (eval_config.graders), learning-rate and tokens/s curves. */
function Curves({ grpo, loss, learningRate, speed, validScore }: { grpo: boolean; loss: ReturnType<typeof lossSeries>; learningRate: ReturnType<typeof progressSeries>; speed: ReturnType<typeof progressSeries>; validScore: ReturnType<typeof validScoreSeries> }) {
  return (
    <>
      {validScore.names.length > 0 && (
        <Card withBorder>
          <TimeSeriesChart
            title="Graders’ score at each evaluation"
            testId="valid-score-chart"
            height={200}
            series={validScore.names.map((label, i) => ({ label, color: SCORE_COLORS[i % SCORE_COLORS.length]!, points: true }))}
            data={validScore.data}
          />
        </Card>
      )}
      <Card withBorder>
        <TimeSeriesChart
          title={grpo ? 'Reward' : 'Loss'}
          testId="loss-chart"
          series={[
            { label: grpo ? 'train reward' : 'train loss', color: '#4c6ef5' },
            { label: grpo ? 'eval reward' : 'eval loss', color: '#e8590c', points: true },
          ]}
          data={loss}
        />
      </Card>
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Card withBorder>
          <TimeSeriesChart title="Learning rate" testId="lr-chart" height={180} series={[{ label: 'learning rate', color: '#2f9e44' }]} data={learningRate} />
        </Card>
        <Card withBorder>
          <TimeSeriesChart title="Tokens per second" testId="speed-chart" height={180} series={[{ label: 'tokens/s', color: '#ae3ec9' }]} data={speed} />
        </Card>
      </SimpleGrid>
    </>
  );
}

function MetricsTable({ job, evals }: { job: TrainingJob; evals: number }) {
  if (!job.metrics) return <Text c="dimmed">{evals > 0 ? `${evals} evaluations so far; the final metrics come when the job ends.` : 'The metrics come when the job ends.'}</Text>;
  return (
    <Table fz="sm" aria-label="Metrics">
      <Table.Tbody>
        {Object.entries(job.metrics).map(([name, value]) => (
          <Table.Tr key={name}>
            <Table.Th>{name}</Table.Th>
            <Table.Td>{formatNumber(value)}</Table.Td>
          </Table.Tr>
        ))}
        {job.best_step && (
          <Table.Tr>
            <Table.Th>best step</Table.Th>
            <Table.Td>{job.best_step}</Table.Td>
          </Table.Tr>
        )}
      </Table.Tbody>
    </Table>
  );
}
