// How numbers, sizes and times read in the console.
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function formatNumber(value: unknown, digits = 4): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) return value === null || value === undefined ? '—' : String(value);
  if (Number.isInteger(value) || Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en');
  return Math.abs(value) < 0.001 ? value.toPrecision(3) : value.toFixed(digits);
}

/** "1 sample", "3 samples". */
export function plural(count: number, noun: string): string {
  return `${count.toLocaleString('en')} ${noun}${count === 1 ? '' : 's'}`;
}

/** Labels of a chart axis's ticks, as few digits as keep them apart: learning rates around 2e-4 read 1e-4, 2e-4 (to
 *  a fixed two decimals they all read 0), and a float's error (0.30000000000000004) never shows. */
export function formatTicks(values: readonly number[]): string[] {
  const largest = Math.max(0, ...values.map((v) => Math.abs(v)));
  const exponential = largest !== 0 && (largest < 1e-3 || largest >= 1e6);
  for (let digits = 1; digits <= 8; digits++) {
    const labels = values.map((v) => tick(v, digits, exponential));
    if (new Set(labels).size === new Set(values).size) return labels;
  }
  return values.map((v) => String(v));
}

function tick(value: number, digits: number, exponential: boolean): string {
  if (value === 0) return '0';
  if (exponential) return value.toExponential(digits - 1).replace(/\.?0+e/, 'e').replace('e+', 'e');
  return String(Number(value.toPrecision(digits)));
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString('en-GB', { dateStyle: 'short', timeStyle: 'medium' });
}

/** The time of day of an event, to the second (a job's events happen within hours of one another). */
export function formatClock(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}
