// JSON Lines rows: one object per non-empty line, each parsed on its own so an error names its line.
import { BadRequest } from '@ftp/platform';
import type { ByteSource } from './byte-source.ts';
import { MAX_ROW_BYTES, type DatasetRow } from './rows.ts';
import { utf8Text } from './text.ts';

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
  return value as DatasetRow;
}

/** Rows of a JSONL file, one batch per chunk of input. */
export async function* readJsonlBatches(source: ByteSource): AsyncGenerator<DatasetRow[]> {
  let partial = ''; // text after the last newline seen, the start of the next line
  let line = 0;
  for await (const text of utf8Text(source)) {
    const lines = (partial + text).split('\n');
    partial = lines.pop()!;
    if (partial.length > MAX_ROW_BYTES) {
      throw new BadRequest(`JSONL line ${line + lines.length + 1} is longer than ${MAX_ROW_BYTES >> 20} MiB; rows must be smaller.`);
    }
    const batch: DatasetRow[] = [];
    for (const raw of lines) {
      line++;
      const trimmed = raw.trim(); // also drops the \r of CRLF
      if (trimmed !== '') batch.push(parseLine(trimmed, line));
    }
    if (batch.length > 0) yield batch;
  }
  if (partial.trim() !== '') yield [parseLine(partial.trim(), line + 1)];
}
