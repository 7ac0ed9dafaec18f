// ftune jobs list | get | cancel | pause | resume | rm | logs: the training service's /jobs.
import { Command } from '@commander-js/extra-typings';
import type { JobDeleteResult, JobList, TrainingJob } from '@ftp/schema';
import { jobEvents, type JobEvent } from '../events.ts';
import { eventLine, stepFigure } from '../follow.ts';
import { segment } from '../http.ts';
import { formatDuration, formatLoss, formatTime, formatValue, printJson, printKeyValue, printLine, printTable } from '../output.ts';
import { context, JSON_HELP } from './context.ts';

function progressText(job: TrainingJob): string | undefined {
  const p = job.progress;
  if (!p) return undefined;
  const parts = [`step ${p.step}${p.total_steps ? `/${p.total_steps}` : ''}`, stepFigure(p)].filter((part) => part !== '');
  if (p.eta_seconds !== null && p.eta_seconds !== undefined && job.status !== 'completed' && job.status !== 'failed') parts.push(`eta ${formatDuration(p.eta_seconds)}`);
  return parts.join('  ');
}

function metricsText(job: TrainingJob): string | undefined {
  const shown = Object.entries(job.metrics ?? {}).filter(([, v]) => typeof v === 'number');
  return shown.length === 0 ? undefined : shown.map(([k, v]) => `${k} ${formatValue(v)}`).join(', ');
}

/** A job as key/value lines: what GET /jobs/{id} says, the parts a person reads. */
export function printJob(job: TrainingJob): void {
  printKeyValue([
    ['job_id', job.job_id],
    ['job_name', job.job_name],
    ['status', job.status],
    ['jobs_ahead', job.jobs_ahead ?? undefined],
    ['error', job.error ?? undefined],
    ['base_model_id', job.base_model_id],
    ['processed_dataset_id', job.processed_dataset_id],
    ['progress', progressText(job)],
    ['metrics', metricsText(job)],
    ['adapter_path', job.adapter_path ?? undefined],
    ['gguf_path', job.gguf_path ?? undefined],
    ['tracker_url', job.tracker_url ?? undefined],
    ['created_at', job.created_at],
    ['started_at', job.started_at ?? undefined],
    ['finished_at', job.finished_at ?? undefined],
    ['updated_at', job.updated_at],
  ]);
}

export function jobsCommand(): Command {
  const jobs = new Command('jobs').description('list, show, cancel, pause, resume, delete training jobs and read their logs (training service)');

  jobs
    .command('list')
    .description('list your training jobs, newest first')
    .option('--json', JSON_HELP)
    .action(async (_options, command) => {
      const { api, json } = context(command);
      const result = await api.json<JobList>('training', 'GET', '/jobs');
      if (json) return printJson(result);
      if (result.jobs.length === 0) return printLine('no jobs');
      // A GRPO job's loss is ~0 by construction: its column is the reward (#39).
      const grpo = (j: TrainingJob) => (j.training_config as { trainer_type?: string } | undefined)?.trainer_type === 'grpo';
      printTable(
        ['ID', 'NAME', 'STATUS', 'MODEL', 'STEP', 'LOSS', 'REWARD', 'CREATED'],
        result.jobs.map((j) => [
          j.job_id, j.job_name, j.status, j.base_model_id,
          j.progress ? `${j.progress.step}${j.progress.total_steps ? `/${j.progress.total_steps}` : ''}` : '-',
          grpo(j) ? '-' : formatLoss(j.progress?.loss), grpo(j) ? formatLoss(j.progress?.reward) : '-', formatTime(j.created_at),
        ]),
      );
    });

  jobs
    .command('get')
    .description('show a training job')
    .argument('<id>', 'job_id')
    .option('--json', JSON_HELP)
    .action(async (id, _options, command) => {
      const { api, json } = context(command);
      const job = await api.json<TrainingJob>('training', 'GET', `/jobs/${segment(id)}`);
      if (json) return printJson(job);
      printJob(job);
    });

  // cancel, pause, resume: POST /jobs/{id}/<action>; the worker acts on its next check, so a running job may still
  // show its running status, and `waiting` says what comes next when it does.
  const jobAction = (action: 'cancel' | 'pause' | 'resume', description: string, waiting?: { until: (job: TrainingJob) => boolean; note: string }) =>
    jobs
      .command(action)
      .description(description)
      .argument('<id>', 'job_id')
      .option('--json', JSON_HELP)
      .action(async (id, _options, command) => {
        const { api, json } = context(command);
        const job = await api.json<TrainingJob>('training', 'POST', `/jobs/${segment(id)}/${action}`);
        if (json) return printJson(job);
        if (waiting && !waiting.until(job)) printLine(waiting.note);
        printJob(job);
      });
  jobAction('cancel', 'cancel a queued, running or paused training job', {
    until: (job) => job.status === 'completed' || job.status === 'failed',
    note: 'cancel requested: the job ends as failed ("cancelled by user") once its worker stops it',
  });
  jobAction('pause', 'pause a queued or running training job: it checkpoints and frees its worker (ftune jobs resume continues it)', {
    until: (job) => job.status === 'paused',
    note: 'pause requested: the job is paused once its trainer has saved a checkpoint at its next step',
  });
  jobAction('resume', 'resume a paused training job from the checkpoint it paused at');

  jobs
    .command('rm')
    .description('delete a training job and its files (cancel a running one first)')
    .argument('<id>', 'job_id')
    .option('--json', JSON_HELP)
    .action(async (id, _options, command) => {
      const { api, json } = context(command);
      const result = await api.json<JobDeleteResult>('training', 'DELETE', `/jobs/${segment(id)}`);
      if (json) return printJson(result);
      printLine(result.message);
    });

  jobs
    .command('logs')
    .description('print a job’s event log (status changes, progress, evaluations, warnings); a running job is followed until it ends')
    .argument('<id>', 'job_id')
    .option('--json', 'print the events as one JSON array [{id, event, data}]')
    .action(async (id, _options, command) => {
      const { api, json } = context(command);
      const events: JobEvent[] = [];
      for await (const event of jobEvents(api, id)) {
        if (json) {
          events.push(event);
          continue;
        }
        if (event.event === 'end') {
          const job = event.data as TrainingJob | { deleted: true };
          printLine('deleted' in job ? 'end: the job was deleted' : `end: ${job.status}${job.error ? ` (${job.error})` : ''}`);
          continue;
        }
        const line = eventLine(event);
        if (line !== null) printLine(line);
      }
      if (json) printJson(events);
    });

  return jobs;
}
