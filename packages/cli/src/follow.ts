// Following a training job over its event stream: one live line (status, step/total, loss, ETA) on a terminal,
// plain lines otherwise, nothing with --json. Ends with the final job.
import cliProgress from 'cli-progress';
import type { TrainingJob } from '@ftp/schema';
import { CliError } from './errors.ts';
import { jobEvents, type JobEvent } from './events.ts';
import type { Api } from './http.ts';
import { formatDuration, formatLoss, formatValue, printLine } from './output.ts';

export type FollowMode = 'live' | 'lines' | 'quiet';

/** The figures an evaluation line shows (the rest, runtimes and rates, are in --json): losses, accuracies, rewards. */
const SHOWN_METRIC = /^(eval_)?(loss|perplexity|accuracy|mean_token_accuracy|rewards?(\/.*)?|best_step)$/;

/** One event as a line of text (what `jobs logs` prints, and --follow off a terminal); null for none. */
export function eventLine(event: JobEvent): string | null {
  switch (event.event) {
    case 'status': {
      const data = event.data as { status?: string; error?: string };
      return `status: ${data.status ?? '?'}${data.error ? ` (${data.error})` : ''}`;
    }
    case 'progress': {
      const p = event.data as { step?: number; total_steps?: number | null; epoch?: number | null; loss?: number | null; reward?: number | null; eta_seconds?: number | null };
      const parts = [`step ${p.step ?? '?'}${p.total_steps ? `/${p.total_steps}` : ''}`, stepFigure(p)].filter((part) => part !== '');
      if (p.epoch !== null && p.epoch !== undefined) parts.push(`epoch ${formatValue(p.epoch)}`);
      if (p.eta_seconds !== null && p.eta_seconds !== undefined) parts.push(`eta ${formatDuration(p.eta_seconds)}`);
      return parts.join('  ');
    }
    case 'metrics': {
      const { step, final, ...values } = event.data as { step?: number; final?: boolean } & Record<string, unknown>;
      const shown = Object.entries(values).filter(([k, v]) => typeof v === 'number' && SHOWN_METRIC.test(k));
      const figures = shown.map(([k, v]) => `${k} ${formatValue(typeof v === 'number' && !Number.isInteger(v) ? Number(v.toPrecision(4)) : v)}`).join('  ');
      // The evaluation after training measures per assistant token: at the last step it differs from the trainer's.
      // GRPO's figures after training are no evaluation: its last step's rewards (the core samples nothing more).
      const rewardsOnly = values.eval_loss === null || values.eval_loss === undefined ? shown.some(([k]) => /^rewards?(\/|$)/.test(k)) : false;
      const what = final ? (rewardsOnly ? `after training (the rewards of step ${step ?? '?'})` : 'final evaluation (every assistant token of the test split)') : `eval${step !== undefined ? ` at step ${step}` : ''}`;
      return `${what}: ${figures}`;
    }
    case 'log': {
      const data = event.data as { level?: string; message?: string };
      return `${data.level ?? 'info'}: ${data.message ?? ''}`;
    }
    case 'end':
      return null;
    default:
      return `${event.event}: ${typeof event.data === 'string' ? event.data : JSON.stringify(event.data)}`;
  }
}

/** A step's figure: its loss, or a GRPO step's reward (its loss is ~0 by construction, #39); '' for neither. */
export function stepFigure(p: { loss?: number | null; reward?: number | null }): string {
  if (p.reward !== null && p.reward !== undefined) return `reward ${formatLoss(p.reward)}`;
  return p.loss !== null && p.loss !== undefined ? `loss ${formatLoss(p.loss)}` : '';
}

interface LivePayload {
  status: string;
  steps: string;
  /** `loss 0.1234`, or a GRPO step's `reward 0.5000` */
  figure: string;
  /** The service's ETA (cli-progress's own `eta` token is its guess from the bar's rate). */
  remaining: string;
}

/** Follows the job until it ends and returns it as the service last showed it. */
export async function followJob(api: Api, jobId: string, mode: FollowMode): Promise<TrainingJob> {
  const bars = mode === 'live'
    ? new cliProgress.MultiBar(
        {
          format: '{status} [{bar}] {steps} | {figure} | ETA {remaining}',
          barsize: 30,
          hideCursor: true,
          clearOnComplete: false,
          stopOnComplete: false,
        },
        cliProgress.Presets.shades_classic,
      )
    : null;
  const payload: LivePayload = { status: 'queued', steps: '-', figure: 'loss -', remaining: '-' };
  const bar = bars?.create(1, 0, payload);
  // Ctrl-C stops following, not the job.
  const onInterrupt = () => {
    bars?.stop();
    process.stderr.write(`\nstopped following job ${jobId}; it goes on (ftune jobs cancel ${jobId} stops it)\n`);
    process.exit(130);
  };
  process.once('SIGINT', onInterrupt);
  try {
    for await (const event of jobEvents(api, jobId)) {
      if (event.event === 'end') {
        const data = event.data as TrainingJob | { deleted: true };
        if ('deleted' in data) throw new CliError(`job ${jobId} was deleted while it was followed`);
        if (bar) {
          payload.status = data.status;
          if (data.status === 'completed') {
            payload.remaining = formatDuration(0);
            bar.update(bar.getTotal(), payload);
          } else bar.update(payload);
        }
        return data;
      }
      if (mode === 'lines') {
        const line = eventLine(event);
        if (line !== null) printLine(line);
        continue;
      }
      if (!bar || !bars) continue;
      if (event.event === 'status') {
        payload.status = (event.data as { status: string }).status;
        bar.update(payload);
      } else if (event.event === 'progress') {
        const p = event.data as { step: number; total_steps?: number | null; loss?: number | null; reward?: number | null; eta_seconds?: number | null };
        if (p.total_steps) bar.setTotal(p.total_steps);
        payload.steps = `${p.step}${p.total_steps ? `/${p.total_steps}` : ''}`;
        payload.figure = stepFigure(p) || payload.figure;
        payload.remaining = formatDuration(p.eta_seconds);
        bar.update(p.step, payload);
      } else {
        const line = eventLine(event);
        if (line !== null) bars.log(`${line}\n`);
      }
    }
    throw new CliError(`the event stream of job ${jobId} ended without its final status`);
  } finally {
    process.removeListener('SIGINT', onInterrupt);
    bars?.stop();
  }
}
