// Image cells of `image` mappings → bytes checked to be an image → stored once per processed dataset
// (content-addressed under its blob prefix) → the blob URI the ChatML part carries.
import { createHash } from 'node:crypto';
import { fileTypeFromBuffer } from 'file-type';
import { invalidField, ServiceUnavailable, type BlobStore } from '@ftp/platform';
import type { ImageResolver } from './records.ts';

const BASE64 = /^[A-Za-z0-9+/\s]+={0,2}$/;
const MIN_BASE64_CHARS = 16;
const FETCH_TIMEOUT_MS = 15_000;

type CellError = (reason: string) => Error;

async function fetchImage(url: string, fail: CellError): Promise<Uint8Array> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  } catch (err) {
    throw new ServiceUnavailable('image host', `the image at ${url} cannot be fetched: ${(err as Error).message}`);
  }
  if (!res.ok) throw fail(`fetching ${url} answered HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

/** The bytes an image cell holds, in any of the forms decisions.md lists. */
async function imageBytes(value: unknown, fail: CellError): Promise<Uint8Array> {
  if (value instanceof Uint8Array) return value;
  if (value && typeof value === 'object' && 'bytes' in value) {
    const bytes = (value as { bytes: unknown }).bytes;
    if (bytes !== null && bytes !== undefined) return imageBytes(bytes, fail);
    const path = (value as { path?: unknown }).path;
    if (typeof path === 'string' && path) return imageBytes(path, fail);
    throw fail('the image struct has neither bytes nor a path');
  }
  if (typeof value !== 'string' || value.trim() === '') throw fail('the cell is empty');
  const text = value.trim();
  const dataUri = /^data:([^;,]+)?(;base64)?,(.*)$/s.exec(text);
  if (dataUri) {
    return dataUri[2] ? Buffer.from(dataUri[3]!, 'base64') : Buffer.from(decodeURIComponent(dataUri[3]!), 'latin1');
  }
  if (/^https?:\/\//i.test(text)) return fetchImage(text, fail);
  if (text.length >= MIN_BASE64_CHARS && BASE64.test(text)) return Buffer.from(text, 'base64');
  throw fail(
    'it is not a data URI, base64 bytes, an http(s) URL or a {bytes, path} struct (paths inside archives need an archive upload, which this version does not accept)',
  );
}

export function createImageResolver(blobs: BlobStore, prefix: string): ImageResolver {
  const stored = new Map<string, string>();
  return async (value, rowNumber, column, loc) => {
    const fail: CellError = (reason) =>
      invalidField(loc, `row ${rowNumber}, column ${JSON.stringify(column)} is not an image: ${reason}`, 'not_an_image');
    const bytes = await imageBytes(value, fail);
    const type = await fileTypeFromBuffer(bytes);
    if (!type || !type.mime.startsWith('image/')) {
      throw fail(type ? `its bytes are ${type.mime}` : 'its bytes are not a known image format (PNG, JPEG, GIF, WebP, BMP, …)');
    }
    const digest = createHash('sha256').update(bytes).digest('hex');
    const known = stored.get(digest);
    if (known) return known;
    const key = `${prefix}images/${digest}.${type.ext}`;
    await blobs.put(key, bytes);
    const uri = blobs.uri(key);
    stored.set(digest, uri);
    return uri;
  };
}
