// Lines of a text stream with a bound on each: a line longer than MAX_ROW_BYTES is refused with its number before it
// is ever built as one string (a 600 MiB file with no newline once ended the process: V8's strings stop at ~512 MiB).
// Every line-oriented reader of stored files goes through here, never through readline, which has no bound.
import type { Readable } from 'node:stream';
import { BadRequest } from '@ftp/platform';
import { MAX_ROW_BYTES } from './rows.ts';

/** A line over the limit: a 400 naming the line; `line` and `limit` for readers that report lines their own way. */
export class LineTooLong extends BadRequest {
  constructor(
    readonly line: number,
    readonly limit: string,
    label: string,
  ) {
    super(`${label} line ${line} is longer than ${limit}; rows must be smaller (is a newline missing?).`);
  }
}

/** The text of a line-oriented file, a batch of complete lines per chunk read; `first` is the 1-based number of the
 *  batch's first line. `label` names the file in the refusal ("JSONL", "the file"); `maxChars` defaults to the row
 *  limit (counted in characters, which is never more than the bytes they came from). */
export async function* lineBatches(
  text: AsyncIterable<string>,
  options: { label?: string; maxChars?: number } = {},
): AsyncGenerator<{ first: number; lines: string[] }> {
  const { label = 'JSONL', maxChars = MAX_ROW_BYTES } = options;
  let pending: string[] = []; // pieces of the line not yet ended, kept apart so no long line is copied per chunk
  let pendingLength = 0;
  let next = 1; // number of the line being read
  const limit = maxChars >= 1024 * 1024 ? `${Math.floor(maxChars / 1024 / 1024)} MiB` : `${maxChars} characters`;
  const tooLong = () => new LineTooLong(next, limit, label);
  for await (const chunk of text) {
    const lines: string[] = [];
    const first = next;
    let start = 0;
    for (let end = chunk.indexOf('\n'); end !== -1; end = chunk.indexOf('\n', start)) {
      if (pendingLength + end - start > maxChars) throw tooLong();
      lines.push(pending.length > 0 ? pending.join('') + chunk.slice(start, end) : chunk.slice(start, end));
      pending = [];
      pendingLength = 0;
      next += 1;
      start = end + 1;
    }
    if (start < chunk.length) {
      pendingLength += chunk.length - start;
      if (pendingLength > maxChars) throw tooLong();
      pending.push(chunk.slice(start));
    }
    if (lines.length > 0) yield { first, lines };
  }
  if (pending.length > 0) yield { first: next, lines: [pending.join('')] };
}

/** A stored file's lines one at a time with their numbers (readline's job, bounded). The stream is UTF-8 text. */
export async function* numberedLines(input: Readable, options: { label?: string; maxChars?: number } = {}): AsyncGenerator<{ number: number; text: string }> {
  input.setEncoding('utf8');
  try {
    for await (const { first, lines } of lineBatches(input as AsyncIterable<string>, options)) {
      for (const [i, line] of lines.entries()) yield { number: first + i, text: line.endsWith('\r') ? line.slice(0, -1) : line };
    }
  } finally {
    input.destroy(); // a reader that stops early (a bad line, enough rows) leaves the file open otherwise
  }
}
