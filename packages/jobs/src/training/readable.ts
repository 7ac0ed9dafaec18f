// How sizes and figures read to a person, the same on every page that shows them: the console (which bundles this
// file: it imports nothing) and the training service's job page. #39: the job page said "0.00 GiB" where the console
// said 2.5 MiB, and 0.20000000298023224 and 14304 where a person reads 0.2 and 14,304.

/** A duration as a person reads it: 42 s, 3 min 5 s, 2 h 10 min ('—' for none). */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** What estimatedTime reads of a pre-flight estimate (PreflightReport's `estimates[]`; this file imports nothing). */
export interface TimeEstimate {
  tokens_per_second?: number | null;
  training_seconds?: number | null;
  overhead_seconds?: number | null;
  wall_seconds?: number | null;
  chat_ready_seconds?: number | null;
}

/** A worker's pre-flight estimate as a person reads it: the time from start to completed, what it is made of, and when
 *  the model is ready for chat after that. */
export function estimatedTime(e: TimeEstimate): string {
  if (e.training_seconds === null || e.training_seconds === undefined) return 'speed not measured yet';
  const steps = `${formatDuration(e.training_seconds)} of steps at ${readableNumber(Math.round(e.tokens_per_second ?? 0))} tokens/s`;
  if (e.overhead_seconds === null || e.overhead_seconds === undefined) return `${steps}, plus loading and saving (not measured on this host yet)`;
  const wall = `about ${formatDuration(e.wall_seconds ?? e.training_seconds + e.overhead_seconds)} from start to completed: ${steps}, ${formatDuration(e.overhead_seconds)} loading, preparing and saving`;
  return e.chat_ready_seconds === null || e.chat_ready_seconds === undefined ? wall : `${wall}; ready for chat on the fast engine about ${formatDuration(e.chat_ready_seconds)} after`;
}

/** Bytes in the largest binary unit that keeps the number at least 1: 512 B, 2.5 MiB, 12 GiB. */
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

/** A figure to four (or `digits`) significant digits without a float's error or trailing zeros, counts with
 *  thousands separators: 0.2, 1.235, 14,304, 0.001, 0.0007, 2e-5. Every page that shows a loss uses it, so two jobs'
 *  losses read alike (#54: the console showed one as 0.0010, another as 0.000700). */
export function readableNumber(value: number, digits = 4): string {
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value) || Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en');
  const rounded = Number(value.toPrecision(digits));
  return Math.abs(rounded) < 1e-4 && rounded !== 0 ? rounded.toExponential() : String(rounded);
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

/** Ticks at round numbers (1, 2, 2.5 or 5 × a power of ten apart) that cover [min, max] in about `count` steps;
 *  `integer`: at least 1 apart (steps of training). The first and last tick are the axis's ends. */
export function niceTicks(min: number, max: number, count = 5, integer = false): number[] {
  if (!(max > min)) return niceTicks(min - (integer ? 1 : Math.abs(min) * 0.1 || 1), max + (integer ? 1 : Math.abs(max) * 0.1 || 1), count, integer);
  const raw = (max - min) / Math.max(count - 1, 1);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!;
  if (integer) step = Math.max(1, Math.ceil(step));
  const first = Math.floor(min / step) * step;
  const ticks: number[] = [];
  for (let v = first; v < max + step; v += step) {
    ticks.push(Number(v.toPrecision(12)));
    if (v >= max) break;
  }
  return ticks;
}
