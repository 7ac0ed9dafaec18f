// The dataset readers' one entry point: detect an upload's format, stream its rows, or inspect it in one pass
// (columns, exact row count, first rows) without ever holding the whole file.
import type { Delimiter } from '@ftp/schema';
import { readHead, type ByteSource } from './byte-source.ts';
import { delimitedLayout, readDelimitedBatches, readDelimitedLayout } from './csv.ts';
import { SingleColumnCheck } from './delimiter.ts';
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
  /** What delimited text was read with; null for JSON, JSONL and Parquet. */
  delimiter: Delimiter | null;
  /** Sentences about what may have been read otherwise than meant. */
  warnings: string[];
}

export interface ReadOptions {
  /** The delimiter of a CSV or TSV file; detected from its first 64 KiB when not given. */
  delimiter?: Delimiter;
}

export const SAMPLE_ROWS = 5;

/** Rows in file order, a batch at a time: the fast path for anything that touches every row. Unparseable
 *  input throws BadRequest naming the row or line. */
export function readRowBatches(source: ByteSource, format: DatasetFormat, options: ReadOptions = {}): AsyncGenerator<DatasetRow[]> {
  switch (format) {
    case 'csv':
    case 'tsv':
      return delimitedBatches(source, format, options.delimiter);
    case 'json':
      return readJsonBatches(source);
    case 'jsonl':
      return readJsonlBatches(source);
    case 'parquet':
      return readParquetBatches(source);
  }
}

async function* delimitedBatches(source: ByteSource, format: 'csv' | 'tsv', delimiter?: Delimiter): AsyncGenerator<DatasetRow[]> {
  yield* readDelimitedBatches(source, await readDelimitedLayout(source, format, delimiter));
}

/** Rows in file order, one at a time. */
export async function* readRows(source: ByteSource, format: DatasetFormat, options: ReadOptions = {}): AsyncGenerator<DatasetRow> {
  for await (const batch of readRowBatches(source, format, options)) yield* batch;
}

/** One streaming pass over an upload: its format, columns, exact row count and first rows; for delimited text, the
 *  delimiter (`options.delimiter` when given) and a warning when one column holds what looks like another delimiter. */
export async function inspectDataset(source: ByteSource, filename: string, options: ReadOptions = {}): Promise<DatasetInspection> {
  if (source.size === 0) throw emptyFileError(0);
  const head = await readHead(source);
  let format = detectFormat(filename, head, { complete: head.length === source.size });
  const warnings: string[] = [];
  let batches: AsyncGenerator<DatasetRow[]>;
  let delimiter: Delimiter | null = null;
  if (format === 'csv' || format === 'tsv') {
    const layout = delimitedLayout(head, source.size, format, options.delimiter);
    delimiter = layout.delimiter;
    format = delimiter === '\t' ? 'tsv' : 'csv';
    batches = readDelimitedBatches(source, layout);
  } else {
    if (options.delimiter !== undefined) {
      warnings.push(`The delimiter ${JSON.stringify(options.delimiter)} was not used: the file is ${format.toUpperCase()}, not delimited text.`);
    }
    batches = readRowBatches(source, format);
  }
  const columns = new Set<string>();
  const sample: DatasetRow[] = [];
  let numExamples = 0;
  let oneColumn: SingleColumnCheck | undefined;
  for await (const batch of batches) {
    for (const row of batch) {
      if (sample.length < SAMPLE_ROWS) sample.push(row);
      for (const key of Object.keys(row)) columns.add(key);
    }
    if (delimiter !== null && columns.size === 1) oneColumn ??= new SingleColumnCheck([...columns][0]!, delimiter);
    oneColumn?.add(batch);
    numExamples += batch.length;
  }
  const oneColumnWarning = oneColumn?.warning();
  if (oneColumnWarning) warnings.push(oneColumnWarning);
  return { format, columns: [...columns], num_examples: numExamples, sample, delimiter, warnings };
}
