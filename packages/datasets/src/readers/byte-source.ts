// Random-access byte input for the dataset readers: whole-file streams for the text formats, range reads for
// Parquet's footer and row groups. Backed by a blob (the service), a local file or a Buffer (tests, tools).
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { BlobNotFound, type BlobStore, type ByteRange } from '@ftp/platform';

export interface ByteSource {
  /** Total size in bytes. */
  size: number;
  /** Streams the whole source, or `[start, end)` of it. */
  read(range?: ByteRange): Promise<Readable>;
}

export async function byteSourceFromFile(path: string): Promise<ByteSource> {
  const { size } = await stat(path);
  return {
    size,
    async read(range) {
      if (range && range.end <= range.start) return Readable.from([]);
      // createReadStream's `end` is inclusive.
      return createReadStream(path, range ? { start: range.start, end: range.end - 1 } : {});
    },
  };
}

export async function byteSourceFromBlob(store: BlobStore, key: string): Promise<ByteSource> {
  const info = await store.stat(key);
  if (!info) throw new BlobNotFound(key);
  return {
    size: info.size,
    read: (range) => store.get(key, range),
  };
}

export function byteSourceFromBuffer(data: Uint8Array): ByteSource {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return {
    size: bytes.length,
    // Several chunks rather than one, so readers meet split lines and split UTF-8 as they would from a file.
    read: async (range) => {
      const part = range ? bytes.subarray(range.start, Math.max(range.start, range.end)) : bytes;
      const chunks: Buffer[] = [];
      for (let i = 0; i < part.length; i += 64 * 1024) chunks.push(part.subarray(i, i + 64 * 1024));
      return Readable.from(chunks, { objectMode: false });
    },
  };
}

/** A stream chunk as bytes: file and blob streams give Buffers, a hand-made Readable may give strings. */
export function asBytes(chunk: unknown): Buffer {
  if (typeof chunk === 'string') return Buffer.from(chunk);
  if (Buffer.isBuffer(chunk)) return chunk;
  const bytes = chunk as Uint8Array;
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Reads `[start, end)` into one exactly sized buffer; throws when the source ends early. */
export async function readRange(source: ByteSource, start: number, end: number): Promise<Uint8Array<ArrayBuffer>> {
  const out = new Uint8Array(Math.max(0, end - start));
  if (out.length === 0) return out;
  let filled = 0;
  for await (const chunk of await source.read({ start, end })) {
    const bytes = asBytes(chunk);
    const take = Math.min(bytes.length, out.length - filled);
    out.set(bytes.subarray(0, take), filled);
    filled += take;
    if (filled === out.length) break;
  }
  if (filled < out.length) {
    throw new Error(`byte source ended at ${start + filled} while reading [${start}, ${end})`);
  }
  return out;
}

/** The first `max` bytes (fewer for a smaller file): what format detection looks at. */
export async function readHead(source: ByteSource, max = 64 * 1024): Promise<Buffer> {
  const head = await readRange(source, 0, Math.min(max, source.size));
  return Buffer.from(head.buffer, head.byteOffset, head.byteLength);
}
