// S3-compatible driver of the blob store (scaled out): blobs are objects in one bucket (AWS S3, SeaweedFS, MinIO, …)
// under the same keys as the folder driver. Uploads stream through multipart upload, so no blob sits in memory whole.
import { ReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline, Readable, Transform } from 'node:stream';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  type BucketLocationConstraint,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { isNetworkErrorCode, ServiceUnavailable } from '../errors.ts';
import { assertValidKey, assertValidPrefix, BlobNotFound, type BlobInfo, type BlobStore, type ByteRange } from './blob-store.ts';

export interface S3BlobStoreOptions {
  bucket: string;
  region: string;
  endpoint?: string;
  /** Bucket in the path rather than in the host name: what SeaweedFS and most S3-compatible servers need. */
  forcePathStyle?: boolean;
  /** Unset: the AWS SDK's default chain (environment, instance role, …). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Keys per ListObjectsV2 request: S3's maximum (1000) unless a test wants to see pagination. */
  listPageSize?: number;
}

/** lib-storage holds one part per upload in flight plus the part being filled, in fresh buffers the garbage
 *  collector frees late: measured on a 500 MB upload (bench/api, bench notes), 8 MiB × 4 in flight grew the
 *  process ~90 MB, 5 MiB × 2 ~20–35 MB at the same speed on loopback. 5 MiB is S3's smallest part; with S3's
 *  10,000 parts a stream of unknown size may be up to ~48 GiB, and a local file of known size gets parts as large
 *  as it needs (partSizeFor). */
const MIN_PART_SIZE = 5 * 1024 * 1024;
const PARTS_IN_FLIGHT = 2;
const MAX_PARTS = 10_000;

/** The part size for `body`: the smallest S3 allows, unless it is a local file too large for 10,000 of them. */
export async function partSizeFor(body: unknown): Promise<number> {
  const file = body instanceof ReadStream && typeof body.path === 'string' ? body.path : undefined;
  const size = file ? await stat(file).then((s) => s.size, () => 0) : 0;
  return Math.max(MIN_PART_SIZE, Math.ceil(size / (MAX_PARTS - 1)));
}
/** S3's limit of keys per DeleteObjects request. */
const DELETE_BATCH = 1000;
/** Without a limit, an endpoint that drops packets is waited on for the kernel's TCP timeout (minutes). */
const CONNECT_TIMEOUT_MS = 10_000;

type SdkError = Error & { code?: string; $metadata?: { httpStatusCode?: number } };

/** The HTTP status S3 answered with; undefined when no answer came (connection refused, DNS, timeout). */
function httpStatus(err: unknown): number | undefined {
  return (err as SdkError | undefined)?.$metadata?.httpStatusCode;
}

/** What S3 said, for a message. Answers to HEAD have no body, so the SDK can only name them by status
 *  ("NotFound", "UnknownError"): then the status is all there is to say. */
function describeAnswer(err: SdkError, status: number): string {
  return err.message && err.message !== 'UnknownError' ? `${err.name}: ${err.message} (HTTP ${status})` : `HTTP ${status}`;
}

export class S3BlobStore implements BlobStore {
  private readonly client: S3Client;
  /** Where the bucket lives, for messages: the endpoint's host (never user info from its URL), or AWS's region. */
  private readonly location: string;

  constructor(private readonly options: S3BlobStoreOptions) {
    this.client = new S3Client({
      region: options.region,
      forcePathStyle: options.forcePathStyle ?? false,
      requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS },
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
    });
    this.location = options.endpoint ? new URL(options.endpoint).host : `AWS S3 (${options.region})`;
  }

  /** Checks that the bucket can be used, creating it when it does not exist: development servers (SeaweedFS,
   *  MinIO) start with no bucket, and a new deployment should need no manual step. On AWS the operator normally
   *  creates the bucket with its policies, so it is found here; creating one needs s3:CreateBucket, and without it
   *  the error says so. */
  async init(): Promise<this> {
    const { bucket, region } = this.options;
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: bucket }));
      return this;
    } catch (err) {
      if (httpStatus(err) !== 404) throw new Error(this.describeBucketFailure(err));
    }
    try {
      await this.client.send(new CreateBucketCommand({
        Bucket: bucket,
        // AWS wants the region named for any region but its first one.
        ...(region !== 'us-east-1' ? { CreateBucketConfiguration: { LocationConstraint: region as BucketLocationConstraint } } : {}),
      }));
    } catch (err) {
      // Processes starting together race to create it; the ones that lose find it is theirs already.
      if ((err as Error).name !== 'BucketAlreadyOwnedByYou') {
        throw new Error(`the bucket does not exist and cannot be created: ${this.describeBucketFailure(err)}`);
      }
    }
    return this;
  }

  async put(key: string, body: Readable | AsyncIterable<Uint8Array | string> | Uint8Array | string): Promise<BlobInfo> {
    assertValidKey(key);
    let size = 0;
    let bodyError: unknown;
    // Counts the bytes and turns strings into Buffers on the way to the upload, which reads it part by part.
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        done(null, chunk);
      },
    });
    const source = typeof body === 'string' || body instanceof Uint8Array ? [body] : body;
    // A failing body destroys `counted` with its error, which fails the upload; lib-storage then aborts the
    // multipart upload, so nothing appears under the key. The error is kept to rethrow as it is: a client that
    // hung up mid-upload is not a storage outage.
    pipeline(source, counted, (err) => {
      bodyError = err;
    });
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.options.bucket, Key: key, Body: counted },
      partSize: await partSizeFor(body),
      queueSize: PARTS_IN_FLIGHT,
    });
    try {
      await upload.done();
    } catch (err) {
      counted.destroy(); // when the storage failed first, stop reading the body
      if (err === bodyError) throw err;
      this.rethrow(err, `storing ${key}`);
    }
    return { key, size };
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    assertValidKey(key);
    if (range && range.end <= range.start) {
      if (!(await this.stat(key))) throw new BlobNotFound(key);
      return Readable.from([]);
    }
    try {
      const { Body } = await this.client.send(new GetObjectCommand({
        Bucket: this.options.bucket,
        Key: key,
        ...(range ? { Range: `bytes=${range.start}-${range.end - 1}` } : {}), // HTTP ranges end inclusive
      }));
      // In Node the SDK's Body is the HTTP response (or a checksum-checking stream around it): a Readable.
      if (!(Body instanceof Readable)) throw new Error(`the S3 SDK returned no readable stream for ${key}`);
      return Body;
    } catch (err) {
      if (httpStatus(err) === 404) throw new BlobNotFound(key);
      // A range that starts past the end: S3 answers 416 where the folder driver reads nothing; the blob exists.
      if (httpStatus(err) === 416) return Readable.from([]);
      return this.rethrow(err, `reading ${key}`);
    }
  }

  async stat(key: string): Promise<BlobInfo | undefined> {
    assertValidKey(key);
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.options.bucket, Key: key }));
      return { key, size: head.ContentLength ?? 0 };
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      return this.rethrow(err, `reading ${key}`);
    }
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    assertValidPrefix(prefix);
    const blobs: BlobInfo[] = [];
    let continuationToken: string | undefined;
    do {
      const page = await this.client
        .send(new ListObjectsV2Command({
          Bucket: this.options.bucket,
          ...(prefix ? { Prefix: prefix } : {}),
          ...(this.options.listPageSize ? { MaxKeys: this.options.listPageSize } : {}),
          ...(continuationToken ? { ContinuationToken: continuationToken } : {}),
        }))
        .catch((err: unknown) => this.rethrow(err, `listing ${prefix || 'the bucket'}`));
      for (const object of page.Contents ?? []) {
        // Keys ending in '/' are folder markers some tools create: not valid keys, so not blobs.
        if (object.Key && !object.Key.endsWith('/')) blobs.push({ key: object.Key, size: object.Size ?? 0 });
      }
      continuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (continuationToken);
    // S3 lists in UTF-8 byte order, SeaweedFS in the order of its folder tree ('a/b' before 'a-b'); sorted here
    // the way the folder driver sorts.
    return blobs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async delete(key: string): Promise<boolean> {
    // S3 answers a delete the same whether the key existed or not, so existence is asked first.
    if (!(await this.stat(key))) return false;
    await this.client
      .send(new DeleteObjectCommand({ Bucket: this.options.bucket, Key: key }))
      .catch((err: unknown) => this.rethrow(err, `deleting ${key}`));
    return true;
  }

  async deletePrefix(prefix: string): Promise<string[]> {
    const keys = (await this.list(prefix)).map((blob) => blob.key);
    for (let start = 0; start < keys.length; start += DELETE_BATCH) {
      const batch = keys.slice(start, start + DELETE_BATCH);
      const result = await this.client
        .send(new DeleteObjectsCommand({
          Bucket: this.options.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true }, // quiet: only failures are listed
        }))
        .catch((err: unknown) => this.rethrow(err, `deleting ${prefix || 'the bucket'}`));
      const [first, ...others] = result.Errors ?? [];
      if (first) {
        throw new Error(`${others.length + 1} of ${batch.length} blobs under ${prefix} were not deleted; ${first.Key}: ${first.Code} ${first.Message}`);
      }
    }
    return keys;
  }

  uri(key: string): string {
    assertValidKey(key);
    return `s3://${this.options.bucket}/${key}`;
  }

  keyFromUri(uri: string): string | undefined {
    const base = `s3://${this.options.bucket}/`;
    if (!uri.startsWith(base)) return undefined;
    const key = uri.slice(base.length);
    try {
      assertValidKey(key);
      return key;
    } catch {
      return undefined;
    }
  }

  async check(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.options.bucket })).catch((err: unknown) => {
      throw new ServiceUnavailable('storage', `the bucket ${this.options.bucket} at ${this.location} cannot be used: ${this.describeBucketFailure(err)}`);
    });
  }

  /** One sentence on why the bucket cannot be used. SDK messages never hold the credentials. */
  private describeBucketFailure(err: unknown): string {
    const error = err as SdkError;
    const status = httpStatus(err);
    if (status === undefined) return `${this.location} is unreachable: ${error.message || error.code || String(err)}`;
    const answer = describeAnswer(error, status);
    if (status === 403) return `access denied (${answer}): the access key or secret is wrong, or may not use this bucket`;
    if (status === 404) return `the bucket ${this.options.bucket} does not exist (${answer})`;
    if (status === 301) return `the bucket is in another region than ${this.options.region} (${answer})`;
    return answer;
  }

  /** Rethrows failures that mean the storage is down (no connection, DNS, timeouts, 5xx after the SDK's own
   *  retries) as ServiceUnavailable('storage'), a 503; anything else as it is. */
  private rethrow(err: unknown, action: string): never {
    const error = err as SdkError;
    const status = httpStatus(err);
    if (status === undefined && (error.name === 'TimeoutError' || isNetworkErrorCode(error.code))) {
      throw new ServiceUnavailable('storage', `the storage at ${this.location} is unreachable (${action}): ${error.message || error.code}`);
    }
    if (status !== undefined && status >= 500) {
      throw new ServiceUnavailable('storage', `the storage at ${this.location} failed (${action}): ${describeAnswer(error, status)}`);
    }
    throw err;
  }
}
