// The text formats' shared front: streams a source's bytes after checking they are UTF-8 (with the byte offset and
// line of the first bad byte when not), drops a leading BOM, and refuses a file with nothing but whitespace.
import { isUtf8 } from 'node:buffer';
import { BadRequest } from '@ftp/platform';
import { asBytes, type ByteSource } from './byte-source.ts';

export const ACCEPTED_FORMATS = 'CSV, TSV, JSON, JSONL or Parquet';

const UTF8_BOM = [0xef, 0xbb, 0xbf];

export function emptyFileError(size: number): BadRequest {
  return new BadRequest(
    size === 0
      ? `The file is empty (0 bytes); upload a ${ACCEPTED_FORMATS} file with at least one row.`
      : `The file contains only whitespace; upload a ${ACCEPTED_FORMATS} file with at least one row.`,
  );
}

/** Bytes at the end of `bytes` that start a multi-byte character the next chunk completes (0 to 3). */
export function incompleteTailLength(bytes: Uint8Array): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead byte
    // Bytes that never start a character (0xC0, 0xC1, 0xF5 and up) are left for the validity check to report.
    const needed = byte >= 0xf5 ? 1 : byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc2 ? 2 : 1;
    return needed > back ? back : 0;
  }
  return 0;
}

/** Index of the first byte that does not start a valid UTF-8 sequence, or -1. Only runs once a chunk has
 *  already failed the fast check, to say where. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i]!;
    if (lead < 0x80) {
      i++;
      continue;
    }
    const extra = lead >= 0xc2 && lead <= 0xdf ? 1 : lead >= 0xe0 && lead <= 0xef ? 2 : lead >= 0xf0 && lead <= 0xf4 ? 3 : -1;
    if (extra < 0 || i + extra >= bytes.length) return i;
    // The second byte's range rules out overlong forms, surrogates and code points above U+10FFFF.
    const low = lead === 0xe0 ? 0xa0 : lead === 0xf0 ? 0x90 : 0x80;
    const high = lead === 0xed ? 0x9f : lead === 0xf4 ? 0x8f : 0xbf;
    const second = bytes[i + 1]!;
    if (second < low || second > high) return i;
    for (let k = 2; k <= extra; k++) if ((bytes[i + k]! & 0xc0) !== 0x80) return i;
    i += extra + 1;
  }
  return -1;
}

function countNewlines(bytes: Uint8Array, end = bytes.length): number {
  let count = 0;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, end);
  for (let at = buf.indexOf(10); at !== -1; at = buf.indexOf(10, at + 1)) count++;
  return count;
}

function hasNonWhitespace(bytes: Uint8Array): boolean {
  for (const byte of bytes) if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d) return true;
  return false;
}

function invalidUtf8(offset: number, line: number, byte: number | undefined): BadRequest {
  const what = byte === undefined ? 'the file ends in the middle of a character' : `byte 0x${byte.toString(16).padStart(2, '0')}`;
  return new BadRequest(
    `The file is not valid UTF-8 text: ${what} at byte offset ${offset} (line ${line}). ` +
      'Save it with UTF-8 encoding and upload it again.',
  );
}

/** The source's bytes, checked as UTF-8, BOM removed. Chunks end on character boundaries. */
export async function* utf8Bytes(source: ByteSource): AsyncGenerator<Buffer> {
  if (source.size === 0) throw emptyFileError(0);
  let offset = 0; // file offset of the next chunk's first byte (counting any carried bytes)
  let line = 1;
  let carry: Buffer | undefined;
  let sawContent = false;
  for await (const piece of await source.read()) {
    const chunk = carry ? Buffer.concat([carry, asBytes(piece)]) : asBytes(piece);
    carry = undefined;
    if (offset === 0 && chunk.length < UTF8_BOM.length && UTF8_BOM.slice(0, chunk.length).every((b, i) => chunk[i] === b)) {
      carry = chunk; // might be a BOM split across reads
      continue;
    }
    let start = 0;
    if (offset === 0 && UTF8_BOM.every((b, i) => chunk[i] === b)) start = 3;
    const tail = incompleteTailLength(chunk);
    const complete = chunk.subarray(start, chunk.length - tail);
    if (tail > 0) carry = Buffer.from(chunk.subarray(chunk.length - tail));
    if (!isUtf8(complete)) {
      const bad = firstInvalidUtf8(complete);
      throw invalidUtf8(offset + start + bad, line + countNewlines(complete, bad), complete[bad]);
    }
    line += countNewlines(complete);
    offset += chunk.length - tail;
    if (!sawContent) sawContent = hasNonWhitespace(complete);
    if (complete.length > 0) yield complete;
  }
  if (carry) throw invalidUtf8(offset, line, undefined); // carried bytes are always an unfinished character
  if (!sawContent) throw emptyFileError(source.size);
}

/** `utf8Bytes` decoded to strings. */
export async function* utf8Text(source: ByteSource): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  for await (const bytes of utf8Bytes(source)) yield decoder.decode(bytes, { stream: true });
}
