// Which character separates the fields of delimited text, told from a sample of its start: papaparse reads the sample
// once per candidate (so quoted delimiters count as text), and the candidate that splits the header into columns and
// gives most rows that many fields wins. The header decides what a decimal comma cannot: in `name;price` / `apple;1,5`
// the comma splits rows but not the header.
import Papa from 'papaparse';
import { DELIMITERS, type Delimiter } from '@ftp/schema';
import type { DatasetRow } from './rows.ts';

/** Records of the sample each candidate is judged on. */
const SAMPLE_RECORDS = 200;

/** The delimiter of `sample`, the start of a file (`complete` when it is the whole file); `preferred` (the one its
 *  extension implies) wins ties. Undefined when no candidate splits the header: a file of one column. */
export function detectDelimiter(sample: string, options: { preferred: Delimiter; complete: boolean }): Delimiter | undefined {
  const candidates = [options.preferred, ...DELIMITERS.filter((d) => d !== options.preferred)];
  let best: { delimiter: Delimiter; fit: number } | undefined;
  for (const delimiter of candidates) {
    const parsed = Papa.parse<string[]>(sample, { delimiter, preview: SAMPLE_RECORDS + 1, skipEmptyLines: 'greedy' });
    // The last record of a cut sample may be cut too.
    const records = !options.complete && parsed.data.length > 2 ? parsed.data.slice(0, -1) : parsed.data;
    const width = records[0]?.length ?? 0;
    if (width < 2) continue;
    const broken = new Set(parsed.errors.map((e) => e.row));
    const rows = records.length - 1;
    const fitting = records.filter((record, i) => i > 0 && record.length === width && !broken.has(i)).length;
    const fit = rows === 0 ? 1 : fitting / rows;
    if (!best || fit > best.fit) best = { delimiter, fit };
  }
  return best?.delimiter;
}

/** The delimiter a file name implies: tab for .tsv and .tab, else comma. */
export const preferredDelimiter = (format: 'csv' | 'tsv'): Delimiter => (format === 'tsv' ? '\t' : ',');

/** Counts, over a one-column file's rows, how many hold each delimiter other than the one it was read with; a warning
 *  when one is in most rows (the file was probably meant to be split by it). */
export class SingleColumnCheck {
  private rows = 0;
  private readonly holding = new Map<Delimiter, number>();

  constructor(
    private readonly column: string,
    private readonly readWith: Delimiter,
  ) {}

  add(batch: DatasetRow[]): void {
    for (const row of batch) {
      const value = row[this.column];
      this.rows += 1;
      if (typeof value !== 'string') continue;
      for (const delimiter of DELIMITERS) {
        if (delimiter !== this.readWith && value.includes(delimiter)) this.holding.set(delimiter, (this.holding.get(delimiter) ?? 0) + 1);
      }
    }
  }

  warning(): string | undefined {
    const [delimiter, count] = [...this.holding].sort((a, b) => b[1] - a[1])[0] ?? [];
    if (delimiter === undefined || count! * 2 <= this.rows) return undefined;
    const shown = JSON.stringify(delimiter);
    return (
      `The file was read as one column, ${JSON.stringify(this.column)}, and ${count} of its ${this.rows} rows contain ${shown}` +
      `${delimiter === '\t' ? ' (a tab)' : ''}. If its columns are separated by ${shown}, upload it again with the field delimiter set to ${shown}.`
    );
  }
}
