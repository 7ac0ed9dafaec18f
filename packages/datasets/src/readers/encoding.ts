// Which text encoding an upload is in, told from its first bytes (a sample, never the whole file): a byte order mark
// says; else UTF-8 when the sample is valid UTF-8; else, for delimited text, Windows-1252, what spreadsheet programs
// export. Decoding itself is the platform's TextDecoder; this file only chooses the label.
import { isAscii, isUtf8 } from 'node:buffer';
import { BadRequest } from '@ftp/platform';

export type TextEncoding = 'utf-8' | 'utf-16le' | 'utf-16be' | 'windows-1252';

export interface EncodingGuess {
  encoding: TextEncoding;
  /** Length of the byte order mark the file starts with (0 without one). */
  bom: number;
  /** The sample held only ASCII, which is UTF-8 and Windows-1252 alike: the first other character of the file
   *  decides (a valid UTF-8 sequence → UTF-8, else Windows-1252). Only where Windows-1252 is allowed. */
  undecided: boolean;
}

/** Human names, for messages. */
export const ENCODING_NAMES: Record<TextEncoding, string> = {
  'utf-8': 'UTF-8',
  'utf-16le': 'UTF-16 LE',
  'utf-16be': 'UTF-16 BE',
  'windows-1252': 'Windows-1252',
};

const startsWith = (head: Uint8Array, bytes: number[]) => head.length >= bytes.length && bytes.every((b, i) => head[i] === b);

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

/** The encoding of a file from its first bytes. `legacy` allows Windows-1252 (CSV and TSV); without it a file that
 *  is not UTF-8 is read as UTF-8 all the same, and its reader names the first bad byte. UTF-32 is refused by name. */
export function sniffEncoding(head: Uint8Array, legacy: boolean): EncodingGuess {
  if (startsWith(head, [0xff, 0xfe, 0, 0]) || startsWith(head, [0, 0, 0xfe, 0xff])) {
    throw new BadRequest('The file is UTF-32 text, which is not read here; save it as UTF-8 (or UTF-16) and upload it again.');
  }
  if (startsWith(head, [0xff, 0xfe])) return { encoding: 'utf-16le', bom: 2, undecided: false };
  if (startsWith(head, [0xfe, 0xff])) return { encoding: 'utf-16be', bom: 2, undecided: false };
  if (startsWith(head, [0xef, 0xbb, 0xbf])) return { encoding: 'utf-8', bom: 3, undecided: false };
  const sample = head.subarray(0, head.length - incompleteTailLength(head));
  if (!isUtf8(sample)) return { encoding: legacy ? 'windows-1252' : 'utf-8', bom: 0, undecided: false };
  return { encoding: 'utf-8', bom: 0, undecided: legacy && isAscii(sample) };
}

/** The first bytes of a file as text, for detection only: BOM dropped, a character cut off at the end left out
 *  (or replaced), never an error. */
export function headText(head: Uint8Array, guess: EncodingGuess): string {
  let body = head.subarray(guess.bom);
  if (guess.encoding === 'utf-8') body = body.subarray(0, body.length - incompleteTailLength(body));
  if (guess.encoding.startsWith('utf-16')) body = body.subarray(0, body.length - (body.length % 2));
  return new TextDecoder(guess.encoding, { ignoreBOM: true }).decode(body);
}
