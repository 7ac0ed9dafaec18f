// How numbers, sizes and times read in the console. Sizes and axis ticks read as on the training service's job page:
// one file, which the console bundles (it imports nothing).
import { readableNumber } from '../../../../../packages/jobs/src/training/readable.ts';

export { estimatedTime, formatBytes, formatDuration, formatTicks } from '../../../../../packages/jobs/src/training/readable.ts';

/** A figure as the training service's job page writes it (readableNumber: `digits` significant digits), '—' for none. */
export function formatNumber(value: unknown, digits = 4): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) return value === null || value === undefined ? '—' : String(value);
  return readableNumber(value, digits);
}

/** The width in CSS pixels a chart's y axis needs: its widest label, then the ticks and the gap beside them (uPlot's
 *  fixed 50 px cut a learning rate's "0.0008" to ".0008", #54). */
export function axisWidth(labels: readonly string[] | null | undefined, textWidth: (label: string) => number, ticksAndGap = 15): number {
  return Math.ceil(Math.max(0, ...(labels ?? []).map(textWidth)) + ticksAndGap) + 2;
}

/** "1 sample", "3 samples". */
export function plural(count: number, noun: string): string {
  return `${count.toLocaleString('en')} ${noun}${count === 1 ? '' : 's'}`;
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString('en-GB', { dateStyle: 'short', timeStyle: 'medium' });
}

/** How long a job ran: from a worker taking it (or, for one that never started, its submission) to its end; null
 *  until it has ended. Never from updated_at, which moved with every later export of the job (#54). */
export function runSeconds(job: { created_at: string; started_at?: string | null; finished_at?: string | null }): number | null {
  if (!job.finished_at) return null;
  return Math.max(0, (Date.parse(job.finished_at) - Date.parse(job.started_at ?? job.created_at)) / 1000);
}

/** The time of day of an event, to the second (a job's events happen within hours of one another). */
export function formatClock(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** A share (0–1) as a percentage to `digits` significant digits: 0.5 → 50%, 0.0976 → 9.76%. */
export function formatPercent(share: number | null | undefined, digits = 3): string {
  return share === null || share === undefined ? '—' : `${formatNumber(100 * share, digits)}%`;
}
