// The dataset readers' one entry point: detect an upload's format, stream its rows, or inspect it in one pass
// (columns, exact row count, first rows) without ever holding the whole file.
import { readHead, type ByteSource } from './byte-source.ts';
import { readDelimitedBatches } from './csv.ts';
import { detectFormat, type DatasetFormat } from './detect.ts';
import { readJsonBatches } from './json.ts';
import { readJsonlBatches } from './jsonl.ts';
import { readParquetBatches } from './parquet.ts';
import type { DatasetRow } from './rows.ts';
import { emptyFileError } from './text.ts';

export { byteSourceFromBlob, byteSourceFromBuffer, byteSourceFromFile, readHead, type ByteSource } from './byte-source.ts';
export { detectFormat, type DatasetFormat } from './detect.ts';
export { toJsonValue } from './parquet.ts';
export { MAX_ROW_BYTES, type DatasetRow } from './rows.ts';
export { ACCEPTED_FORMATS } from './text.ts';

export interface DatasetInspection {
  format: DatasetFormat;
  /** Union of the rows' keys, in the order they first appear. */
  columns: string[];
  num_examples: number;
  /** The first rows (up to SAMPLE_ROWS), exactly as read. */
  sample: DatasetRow[];
}

export const SAMPLE_ROWS = 5;

/** Rows in file order, a batch at a time: the fast path for anything that touches every row. Unparseable
 *  input throws BadRequest naming the row or line. */
export function readRowBatches(source: ByteSource, format: DatasetFormat): AsyncGenerator<DatasetRow[]> {
  switch (format) {
    case 'csv':
      return readDelimitedBatches(source, ',');
    case 'tsv':
      return readDelimitedBatches(source, '\t');
    case 'json':
      return readJsonBatches(source);
    case 'jsonl':
      return readJsonlBatches(source);
    case 'parquet':
      return readParquetBatches(source);
  }
}

/** Rows in file order, one at a time. */
export async function* readRows(source: ByteSource, format: DatasetFormat): AsyncGenerator<DatasetRow> {
  for await (const batch of readRowBatches(source, format)) yield* batch;
}

/** One streaming pass over an upload: its format, columns, exact row count and first rows. */
export async function inspectDataset(source: ByteSource, filename: string): Promise<DatasetInspection> {
  if (source.size === 0) throw emptyFileError(0);
  const format = detectFormat(filename, await readHead(source));
  const columns = new Set<string>();
  const sample: DatasetRow[] = [];
  let numExamples = 0;
  for await (const batch of readRowBatches(source, format)) {
    for (const row of batch) {
      if (sample.length < SAMPLE_ROWS) sample.push(row);
      for (const key of Object.keys(row)) columns.add(key);
    }
    numExamples += batch.length;
  }
  return { format, columns: [...columns], num_examples: numExamples, sample };
}
