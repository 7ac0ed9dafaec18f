// Decides which reader an upload needs from its first bytes and its name. Content decides; the extension only
// breaks ties and is overruled where the content plainly says otherwise (a ".json" file of JSON Lines).
import { BadRequest } from '@ftp/platform';
import { detectDelimiter } from './delimiter.ts';
import { headText, sniffEncoding } from './encoding.ts';
import { ACCEPTED_FORMATS, emptyFileError } from './text.ts';

export type DatasetFormat = 'csv' | 'tsv' | 'json' | 'jsonl' | 'parquet';

const EXTENSION_FORMATS: Record<string, DatasetFormat | 'text'> = {
  csv: 'csv',
  tsv: 'tsv',
  tab: 'tsv',
  txt: 'text',
  json: 'json',
  jsonl: 'jsonl',
  ndjson: 'jsonl',
  parquet: 'parquet',
  pq: 'parquet',
};

function extensionHint(filename: string): DatasetFormat | 'text' | undefined {
  const dot = filename.lastIndexOf('.');
  return dot === -1 ? undefined : EXTENSION_FORMATS[filename.slice(dot + 1).toLowerCase()];
}

function unrecognized(filename: string, reason: string): BadRequest {
  return new BadRequest(`Cannot read ${JSON.stringify(filename)}: ${reason}. Accepted formats are ${ACCEPTED_FORMATS}.`);
}

function startsWith(head: Uint8Array, bytes: number[]): boolean {
  return head.length >= bytes.length && bytes.every((b, i) => head[i] === b);
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** True for `{"rows": [{...}, ...]}`: one array field, holding objects, and nothing else array-like. */
function isObjectWithOneRowArray(value: Record<string, unknown>): boolean {
  const arrays = Object.values(value).filter(Array.isArray);
  return arrays.length === 1 && arrays[0]!.length > 0 && arrays[0]!.every((v) => v !== null && typeof v === 'object' && !Array.isArray(v));
}

function jsonOrJsonl(text: string, hint: DatasetFormat | 'text' | undefined): 'json' | 'jsonl' {
  const newline = text.indexOf('\n');
  const firstLine = (newline === -1 ? text : text.slice(0, newline)).trim();
  const rest = newline === -1 ? '' : text.slice(newline + 1).trimStart();
  // A lone "{" opens a pretty-printed document, whatever the name says.
  if (hint === 'jsonl') return firstLine === '{' ? 'json' : 'jsonl';
  const first = parseObject(firstLine);
  // The first line is not a whole object: pretty-printed JSON, or a row longer than the head we were given.
  if (!first) return 'json';
  if (rest.startsWith('{')) return 'jsonl'; // a second object on the next line is JSON Lines, even in a ".json"
  if (rest === '') return hint === 'json' || isObjectWithOneRowArray(first) ? 'json' : 'jsonl';
  return hint === 'json' ? 'json' : 'jsonl';
}

function delimited(text: string, hint: DatasetFormat | 'text' | undefined, filename: string, complete: boolean): DatasetFormat {
  // A ".json" holding a bare string, number or literal goes to the JSON reader, which says why it is not rows.
  if ((hint === 'json' || hint === 'jsonl') && /^["\-\d]|^(true|false|null)\b/.test(text)) return hint;
  const delimiter = detectDelimiter(text, { preferred: hint === 'tsv' ? '\t' : ',', complete });
  if (delimiter !== undefined) return delimiter === '\t' ? 'tsv' : 'csv';
  if (hint === 'csv' || hint === 'tsv' || hint === 'json' || hint === 'jsonl') return hint; // one column, or the JSON reader says why not
  if (hint === 'text') return 'csv'; // a one-column table
  throw unrecognized(
    filename,
    hint === 'parquet'
      ? 'it does not start with the Parquet magic bytes "PAR1"'
      : 'the content is neither JSON nor text separated by commas, semicolons, tabs or pipes',
  );
}

/** NUL characters, or more than a few control characters, mean binary. Invalid UTF-8 alone does not: a Latin-1 CSV is
 *  text (read as Windows-1252), and a JSON reader says at which byte the encoding breaks, which tells the user what to
 *  fix. Judged on the decoded text, so that UTF-16's zero bytes are not taken for binary. */
function looksBinary(text: string): boolean {
  let controls = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0) return true;
    if (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d && code !== 0x0c) controls++;
  }
  return controls > text.length / 100;
}

/** Picks the reader for a file from its name and its first bytes (`head`, e.g. the first 64 KiB; `complete` when that
 *  is the whole file). */
export function detectFormat(filename: string, head: Buffer, options: { complete?: boolean } = {}): DatasetFormat {
  if (head.length === 0) throw emptyFileError(0);
  const hint = extensionHint(filename);
  if (startsWith(head, [0x50, 0x41, 0x52, 0x31])) return 'parquet'; // "PAR1"
  const body = headText(head, sniffEncoding(head, true));
  if (looksBinary(body)) {
    throw unrecognized(
      filename,
      hint === 'parquet' ? 'it does not start with the Parquet magic bytes "PAR1"' : 'the content is binary, not text',
    );
  }
  const text = body.trimStart();
  if (text === '') {
    if (hint !== undefined && hint !== 'parquet' && hint !== 'text') return hint; // its reader says "only whitespace"
    throw emptyFileError(head.length);
  }
  if (text.startsWith('[')) return 'json';
  if (text.startsWith('{')) return jsonOrJsonl(text, hint);
  return delimited(text, hint, filename, options.complete ?? true);
}
