// Human output (tables for lists, key/value lines for one object) and --json output (the API's document, once).
import Table from 'cli-table3';

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printLine(line = ''): void {
  process.stdout.write(`${line}\n`);
}

/** A value as one cell or one line: `-` for nothing, lists joined, objects as compact JSON. */
export function formatValue(value: unknown): string {
  if (value === undefined || value === null || value === '') return '-';
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(6)));
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map((v) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v))).join(', ');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** `key  value` lines, keys padded to one column; undefined values are left out. */
export function printKeyValue(rows: ReadonlyArray<readonly [string, unknown]>): void {
  const shown = rows.filter(([, value]) => value !== undefined);
  const width = Math.max(0, ...shown.map(([key]) => key.length));
  for (const [key, value] of shown) printLine(`${key.padEnd(width)}  ${formatValue(value)}`);
}

/** A table without colours (output may go to a file or a pipe). */
export function printTable(head: readonly string[], rows: ReadonlyArray<readonly unknown[]>): void {
  const table = new Table({ head: [...head], style: { head: [], border: [] } });
  for (const row of rows) table.push(row.map(formatValue));
  printLine(table.toString());
}

/** "1 row", "3 rows", "1,204 rows". */
export function plural(count: number, noun: string): string {
  return `${count.toLocaleString('en')} ${noun}${count === 1 ? '' : 's'}`;
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '-';
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  if (h > 0) return `${h}h${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m${String(rest).padStart(2, '0')}s`;
  return `${rest}s`;
}

export function formatLoss(loss: number | null | undefined): string {
  return loss === null || loss === undefined || !Number.isFinite(loss) ? '-' : loss.toFixed(4);
}

/** A timestamp as the API gives it, shortened to the second for tables. */
export function formatTime(value: string | null | undefined): string {
  if (!value) return '-';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toISOString().replace(/\.\d{3}Z$/, 'Z').replace('T', ' ');
}
