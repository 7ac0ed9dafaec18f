// The text formats' shared front: streams a source's text in the encoding its first bytes show (encoding.ts), checks
// UTF-8 as it goes (with the byte offset and line of the first bad byte when not), drops a leading BOM, and refuses a
// file with nothing but whitespace. Nothing is held but the chunk at hand.
import { isAscii, isUtf8 } from 'node:buffer';
import { TextDecoder } from 'node:util';
import { BadRequest } from '@ftp/platform';
import { asBytes, readHead, type ByteSource } from './byte-source.ts';
import { ENCODING_NAMES, incompleteTailLength, sniffEncoding, type EncodingGuess } from './encoding.ts';

export const ACCEPTED_FORMATS = 'CSV, TSV, JSON, JSONL or Parquet';

const UTF8_BOM = [0xef, 0xbb, 0xbf];

export function emptyFileError(size: number): BadRequest {
  return new BadRequest(
    size === 0
      ? `The file is empty (0 bytes); upload a ${ACCEPTED_FORMATS} file with at least one row.`
      : `The file contains only whitespace; upload a ${ACCEPTED_FORMATS} file with at least one row.`,
  );
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

/** The first byte of a chunk (that is not all ASCII) at or above 0x80. */
function firstNonAscii(bytes: Uint8Array): number {
  let i = 0;
  while (bytes[i]! < 0x80) i++;
  return i;
}

/** UTF-8 text, checked chunk by chunk, BOM removed. While `undecided` (only ASCII so far, Windows-1252 allowed), the
 *  first other character decides: not a valid UTF-8 sequence, and the rest of the file is read as Windows-1252. */
async function* utf8Text(source: ByteSource, undecided: boolean): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  let legacy: TextDecoder | undefined;
  let offset = 0; // file offset of the next chunk's first byte (counting any carried bytes)
  let line = 1;
  let carry: Buffer | undefined;
  let sawContent = false;
  for await (const piece of await source.read()) {
    if (legacy) {
      const bytes = asBytes(piece);
      if (!sawContent) sawContent = hasNonWhitespace(bytes);
      yield legacy.decode(bytes, { stream: true });
      continue;
    }
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
    if (undecided && !isAscii(complete)) {
      undecided = false;
      const at = firstNonAscii(complete);
      if (firstInvalidUtf8(complete.subarray(at, at + 4)) === 0) {
        legacy = new TextDecoder('windows-1252');
        sawContent = true; // a character that is not ASCII
        yield legacy.decode(chunk.subarray(start), { stream: true });
        continue;
      }
    }
    if (!isUtf8(complete)) {
      const bad = firstInvalidUtf8(complete);
      throw invalidUtf8(offset + start + bad, line + countNewlines(complete, bad), complete[bad]);
    }
    line += countNewlines(complete);
    offset += chunk.length - tail;
    if (!sawContent) sawContent = hasNonWhitespace(complete);
    if (tail > 0) carry = Buffer.from(chunk.subarray(chunk.length - tail));
    if (complete.length > 0) yield decoder.decode(complete, { stream: true });
  }
  if (legacy) {
    const rest = legacy.decode(); // a byte the stream held back: none in Windows-1252, where every byte is a character
    if (rest) yield rest;
  } else if (carry && undecided) {
    sawContent = true;
    yield new TextDecoder('windows-1252').decode(carry); // the file ends on its first byte that is not ASCII
  } else if (carry) throw invalidUtf8(offset, line, undefined); // carried bytes are an unfinished character
  if (!sawContent) throw emptyFileError(source.size);
}

/** UTF-16 (after its BOM) or Windows-1252 text, through the platform's decoder; invalid UTF-16 is refused by name. */
async function* decodedBy(source: ByteSource, guess: EncodingGuess): AsyncGenerator<string> {
  const decoder = new TextDecoder(guess.encoding, { fatal: true }); // drops the encoding's own BOM
  let sawContent = false;
  const decode = (bytes?: Buffer) => {
    try {
      const text = bytes ? decoder.decode(bytes, { stream: true }) : decoder.decode();
      if (!sawContent) sawContent = /\S/.test(text);
      return text;
    } catch {
      throw new BadRequest(
        `The file starts with a ${ENCODING_NAMES[guess.encoding]} byte order mark but is not valid ${ENCODING_NAMES[guess.encoding]} text ` +
          '(an unpaired surrogate, or an odd number of bytes). Save it as UTF-8 and upload it again.',
      );
    }
  };
  for await (const piece of await source.read()) {
    const text = decode(asBytes(piece));
    if (text) yield text;
  }
  const rest = decode();
  if (rest) yield rest;
  if (!sawContent) throw emptyFileError(source.size);
}

/** The text of a source, chunk by chunk, in the encoding its first 64 KiB show (`guess`, when the caller has looked
 *  already). `legacy` allows Windows-1252: CSV and TSV, which spreadsheet programs write so; JSON is UTF-8 (RFC 8259),
 *  and a JSON file that is not is refused at its first bad byte. */
export async function* decodedText(source: ByteSource, options: { legacy: boolean; guess?: EncodingGuess }): AsyncGenerator<string> {
  if (source.size === 0) throw emptyFileError(0);
  const guess = options.guess ?? sniffEncoding(await readHead(source), options.legacy);
  if (guess.encoding === 'utf-8') yield* utf8Text(source, guess.undecided);
  else yield* decodedBy(source, guess);
}
