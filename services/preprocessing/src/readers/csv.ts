// CSV and TSV rows: csv-parse does the quoting (embedded commas, tabs and newlines, CRLF); this file turns the
// header into column names, records into objects (values stay strings), and csv-parse's errors into messages
// that name the row and line.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CsvError, parse, type Options } from 'csv-parse';
import { BadRequest } from '@ftp/platform';
import type { ByteSource } from './byte-source.ts';
import { utf8Bytes } from './text.ts';
import { drainInBatches, MAX_ROW_BYTES, type DatasetRow } from './rows.ts';

/** Empty header cells are named the way pandas names them, so a CSV saved with its index still loads. */
function columnNames(header: string[], label: string): string[] {
  const names = header.map((name, i) => (name.trim() === '' ? `Unnamed: ${i}` : name));
  const seen = new Map<string, number>();
  const repeats: string[] = [];
  names.forEach((name, i) => {
    const first = seen.get(name);
    if (first === undefined) seen.set(name, i);
    else repeats.push(`${JSON.stringify(name)} (columns ${first + 1} and ${i + 1})`);
  });
  if (repeats.length > 0) {
    throw new BadRequest(
      `The ${label} header repeats column names: ${repeats.join(', ')}. Rename the columns so each name is unique.`,
    );
  }
  return names;
}

function toRow(names: string[], record: string[]): DatasetRow {
  const row: DatasetRow = {};
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    // A column called "__proto__" must become a field, not the object's prototype.
    if (name === '__proto__') Object.defineProperty(row, name, { value: record[i], enumerable: true, writable: true, configurable: true });
    else row[name] = record[i];
  }
  return row;
}

function describeCsvError(err: CsvError, label: string, headerLength: number): BadRequest {
  const line = typeof err['lines'] === 'number' ? err['lines'] : undefined;
  const rowNumber = typeof err['records'] === 'number' ? err['records'] : undefined;
  const where = rowNumber === 0 ? 'the header' : `row ${rowNumber ?? '?'}`;
  switch (err.code) {
    case 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH': {
      const record = Array.isArray(err['record']) ? err['record'] : [];
      return new BadRequest(
        `${label} row ${rowNumber} (line ${line}) has ${record.length} fields, the header has ${headerLength}. ` +
          'Every row needs one value per column; quote values that contain the delimiter.',
      );
    }
    case 'CSV_QUOTE_NOT_CLOSED':
      return new BadRequest(
        `The ${label} file ends inside a quoted field in ${where}: a quote opened there is never closed.`,
      );
    case 'CSV_MAX_RECORD_SIZE':
      return new BadRequest(
        `${label} ${where} (line ${line}) is larger than ${MAX_ROW_BYTES >> 20} MiB; a quote is probably left unclosed.`,
      );
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return new BadRequest(
        `${label} ${where} (line ${line}): a closing quote is followed by other characters; ` +
          'write a quote inside a quoted value as two quotes ("").',
      );
    default:
      return new BadRequest(`${label} ${where} (line ${line}) cannot be parsed: ${err.message}.`);
  }
}

/** Rows of a CSV or TSV file, in batches. */
export async function* readDelimitedBatches(source: ByteSource, delimiter: ',' | '\t'): AsyncGenerator<DatasetRow[]> {
  const label = delimiter === ',' ? 'CSV' : 'TSV';
  // csv-parse hands its options to the Transform it extends, so stream options ride along.
  const options: Options & { readableHighWaterMark: number } = {
    delimiter,
    skip_empty_lines: true,
    // A quote inside an unquoted value ("5" screen) is kept as text rather than refused.
    relax_quotes: true,
    max_record_size: MAX_ROW_BYTES,
    // Deep enough that each wake-up hands over a real batch, not a handful of rows.
    readableHighWaterMark: 4096,
  };
  const parser = parse(options);
  const feeding = pipeline(Readable.from(utf8Bytes(source), { objectMode: false }), parser);
  feeding.catch(() => {}); // the parser re-raises the same error to the loop below
  let names: string[] | undefined;
  let rows = 0;
  try {
    for await (const records of drainInBatches<string[]>(parser, 4096)) {
      let start = 0;
      if (!names) {
        names = columnNames(records[0]!, label);
        start = 1;
      }
      const batch: DatasetRow[] = new Array(records.length - start);
      for (let i = start; i < records.length; i++) batch[i - start] = toRow(names, records[i]!);
      rows += batch.length;
      if (batch.length > 0) yield batch;
    }
  } catch (err) {
    if (err instanceof CsvError) throw describeCsvError(err, label, names?.length ?? 0);
    throw err;
  } finally {
    parser.destroy();
  }
  if (!names) throw new BadRequest(`The ${label} file has no header row.`);
  if (rows === 0) throw new BadRequest(`The ${label} file has a header but no rows.`);
}
