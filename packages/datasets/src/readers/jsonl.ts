// JSON Lines rows: one object per non-empty line, each parsed on its own so an error names its line.
import { BadRequest } from '@ftp/platform';
import type { ByteSource } from './byte-source.ts';
import { lineBatches } from './lines.ts';
import { lonelySurrogateAt, type DatasetRow } from './rows.ts';
import { decodedText } from './text.ts';

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

function parseLine(text: string, line: number): DatasetRow {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new BadRequest(`JSONL line ${line} is not valid JSON (${(err as Error).message}); each line must hold one JSON object.`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new BadRequest(`JSONL line ${line} is ${kindOf(value)}, not an object; each line must hold one row such as {"text": "..."}.`);
  }
  const surrogate = lonelySurrogateAt(value);
  if (surrogate !== undefined) throw new BadRequest(`JSONL line ${line}: ${surrogate}`);
  return value as DatasetRow;
}

/** Rows of a JSONL file, one batch per chunk of input. */
export async function* readJsonlBatches(source: ByteSource): AsyncGenerator<DatasetRow[]> {
  for await (const { first, lines } of lineBatches(decodedText(source, { legacy: false }))) {
    const batch: DatasetRow[] = [];
    for (const [i, raw] of lines.entries()) {
      const trimmed = raw.trim(); // also drops the \r of CRLF
      if (trimmed !== '') batch.push(parseLine(trimmed, first + i));
    }
    if (batch.length > 0) yield batch;
  }
}
