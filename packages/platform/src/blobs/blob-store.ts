// The one storage interface every service uses for files (raw uploads, processed splits, model artifacts).
// Drivers: a local folder (embedded default, folder-store.ts) and an S3-compatible bucket (scaled out,
// s3-store.ts); no `if (s3)` outside them.
import type { Readable } from 'node:stream';

export interface BlobInfo {
  key: string;
  size: number;
}

export interface ByteRange {
  /** First byte, inclusive. */
  start: number;
  /** Last byte, exclusive. */
  end: number;
}

export interface BlobStore {
  /** Streams `body` into `key`. The blob becomes visible only once fully written; a failed or aborted
   *  stream leaves nothing behind under `key`. Returns the number of bytes written. */
  put(key: string, body: Readable | AsyncIterable<Uint8Array | string> | Uint8Array | string): Promise<BlobInfo>;
  /** Streams a blob, or a byte range of it. Throws BlobNotFound when absent. */
  get(key: string, range?: ByteRange): Promise<Readable>;
  /** Size of a blob, or undefined when absent. */
  stat(key: string): Promise<BlobInfo | undefined>;
  /** Every blob whose key starts with `prefix`, sorted by key. */
  list(prefix: string): Promise<BlobInfo[]>;
  /** Deletes one blob; returns whether it existed. */
  delete(key: string): Promise<boolean>;
  /** Deletes every blob under `prefix`; returns the keys removed. */
  deletePrefix(prefix: string): Promise<string[]>;
  /** The URI clients see for a key: file://… for the folder driver, s3://bucket/key for S3. */
  uri(key: string): string;
  /** Reverse of uri(); undefined when the URI is not of this store. */
  keyFromUri(uri: string): string | undefined;
  /** Liveness probe for /health. */
  check(): Promise<void>;
}

export class BlobNotFound extends Error {
  constructor(readonly key: string) {
    super(`blob not found: ${key}`);
    this.name = 'BlobNotFound';
  }
}

export class InvalidBlobKey extends Error {
  constructor(readonly key: string, reason: string) {
    super(`invalid storage key ${JSON.stringify(key.slice(0, 80))}: ${reason}`);
    this.name = 'InvalidBlobKey';
  }
}

const MAX_KEY_BYTES = 1024;
const MAX_SEGMENT_BYTES = 255;

/** Keys are relative, slash-separated paths. Anything that could escape the store's root or be
 *  read differently by another driver is refused here, once, for every driver. */
export function assertValidKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidBlobKey(String(key), 'empty key');
  if (key.includes('\0')) throw new InvalidBlobKey(key, 'contains a NUL byte');
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) throw new InvalidBlobKey(key, `longer than ${MAX_KEY_BYTES} bytes`);
  if (key.startsWith('/') || /^[A-Za-z]:/.test(key)) throw new InvalidBlobKey(key, 'absolute paths are not keys');
  if (key.includes('\\')) throw new InvalidBlobKey(key, 'backslashes are not allowed');
  for (const segment of key.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw new InvalidBlobKey(key, 'empty, "." and ".." path segments are not allowed');
    }
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) {
      throw new InvalidBlobKey(key, `a path segment is longer than ${MAX_SEGMENT_BYTES} bytes`);
    }
  }
}

/** Prefixes may be empty (everything) or end with '/'; otherwise they follow the key rules. */
export function assertValidPrefix(prefix: string): void {
  if (prefix === '') return;
  assertValidKey(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
}

/** A user id as one key segment. Ids come from API keys or JWT `sub` claims and may hold any character. */
export function userKeySegment(userId: string): string {
  return encodeURIComponent(userId) || '_';
}
