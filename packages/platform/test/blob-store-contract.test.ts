// Contract of the blob store: the folder driver and the S3 driver against a real SeaweedFS pass the same cases, so
// code above the BlobStore interface cannot tell which it has. Then what only S3 has: multipart uploads, creating
// the bucket, credentials, an endpoint that is down. Folder-only cases stay in blobs.test.ts.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { buffer, text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HeadBucketCommand, HeadObjectCommand, ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobNotFound, FolderBlobStore, InvalidBlobKey, S3BlobStore, ServiceUnavailable, type BlobStore, type S3BlobStoreOptions } from '@ftp/platform';
import { partSizeFor } from '../src/blobs/s3-store.ts';
import { freePort } from '../../../test/servers/servers.ts';

const MiB = 1024 * 1024;
const tempDirs: string[] = [];
afterAll(() => Promise.all(tempDirs.map((dir) => fs.rm(dir, { recursive: true, force: true }))));

const uniqueName = (label: string) => `ftp-${label}-${randomBytes(4).toString('hex')}`;

function s3Options(overrides: Partial<S3BlobStoreOptions> = {}): S3BlobStoreOptions {
  const { s3 } = inject('servers');
  return {
    bucket: uniqueName('blobs'), region: s3.region, endpoint: s3.endpoint, forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }, ...overrides,
  };
}

function s3Client(): S3Client {
  const { s3 } = inject('servers');
  return new S3Client({ region: s3.region, endpoint: s3.endpoint, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
}

/** A new, empty store, with what the contract needs to know about how that driver keeps blobs. */
interface BlobFixture {
  store: BlobStore;
  /** What uri('k/v.bin') looks like. */
  uriPattern: RegExp;
  /** Writes begun and never finished that the store still keeps: temp files, multipart uploads. */
  unfinishedWrites(): Promise<string[]>;
}

const drivers: Array<{ name: string; open(): Promise<BlobFixture> }> = [
  {
    name: 'folder',
    async open() {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-blob-contract-'));
      tempDirs.push(dir);
      return {
        store: await new FolderBlobStore(path.join(dir, 'blobs')).init(),
        uriPattern: /^file:\/\/\/.*\/blobs\/k\/v\.bin$/,
        unfinishedWrites: () => fs.readdir(path.join(dir, 'blobs', '.tmp')),
      };
    },
  },
  {
    name: 'S3 (SeaweedFS)',
    async open() {
      // A small page, so listing more than a handful of keys goes through pagination.
      const options = s3Options({ listPageSize: 7 });
      return {
        store: await new S3BlobStore(options).init(),
        uriPattern: new RegExp(`^s3://${options.bucket}/k/v\\.bin$`),
        async unfinishedWrites() {
          const { Uploads } = await s3Client().send(new ListMultipartUploadsCommand({ Bucket: options.bucket }));
          return (Uploads ?? []).map((upload) => upload.Key ?? '');
        },
      };
    },
  },
];

/** `count` chunks of 1 MiB of random bytes, and the sha256 of all of them once the generator is done. */
function randomMebibytes(count: number, failAfter?: Error): { chunks: AsyncGenerator<Buffer>; sha256: () => string } {
  const hash = createHash('sha256');
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let i = 0; i < count; i++) {
      const chunk = randomBytes(MiB);
      hash.update(chunk);
      yield chunk;
    }
    if (failAfter) throw failAfter;
  }
  return { chunks: chunks(), sha256: () => hash.digest('hex') };
}

describe.each(drivers)('blob store contract: $name', (driver) => {
  let fixture: BlobFixture;
  let store: BlobStore;
  beforeAll(async () => {
    fixture = await driver.open();
    store = fixture.store;
  });
  /** Each test works under a prefix of its own, so tests never see one another's blobs. */
  const area = () => `${randomBytes(4).toString('hex')}/`;

  it('round-trips bytes, strings, streams and generators', async () => {
    const p = area();
    const bytes = randomBytes(3000);
    expect(await store.put(`${p}bytes.bin`, bytes)).toEqual({ key: `${p}bytes.bin`, size: 3000 });
    expect(await buffer(await store.get(`${p}bytes.bin`))).toEqual(bytes);
    expect(await store.put(`${p}text.txt`, 'héllo wörld')).toEqual({ key: `${p}text.txt`, size: 13 });
    expect(await text(await store.get(`${p}text.txt`))).toBe('héllo wörld');
    expect(await store.put(`${p}stream.txt`, Readable.from(['hello ', 'world']))).toEqual({ key: `${p}stream.txt`, size: 11 });
    expect(await text(await store.get(`${p}stream.txt`))).toBe('hello world');
    const generated = (async function* () {
      yield 'a,b\n';
      yield new TextEncoder().encode('1,2\n');
    })();
    expect(await store.put(`${p}generated.csv`, generated)).toEqual({ key: `${p}generated.csv`, size: 8 });
    expect(await text(await store.get(`${p}generated.csv`))).toBe('a,b\n1,2\n');
    expect(await store.put(`${p}empty`, '')).toEqual({ key: `${p}empty`, size: 0 });
    expect(await text(await store.get(`${p}empty`))).toBe('');
    expect(await store.put(`${p}text.txt`, 'replaced')).toEqual({ key: `${p}text.txt`, size: 8 });
    expect(await text(await store.get(`${p}text.txt`))).toBe('replaced');
  });

  it('reads byte ranges: start, middle, end, empty and past the end', async () => {
    const key = `${area()}a/b/data.txt`;
    await store.put(key, 'hello world');
    const read = async (start: number, end: number) => text(await store.get(key, { start, end }));
    expect(await read(0, 5)).toBe('hello');
    expect(await read(3, 8)).toBe('lo wo');
    expect(await read(6, 11)).toBe('world');
    expect(await read(6, 100)).toBe('world');
    expect(await read(3, 3)).toBe('');
    expect(await read(20, 30)).toBe('');
    await expect(store.get(`${key}.missing`)).rejects.toBeInstanceOf(BlobNotFound);
    await expect(store.get(`${key}.missing`, { start: 0, end: 0 })).rejects.toBeInstanceOf(BlobNotFound);
  });

  it('stats blobs, and nothing for missing keys or folders', async () => {
    const p = area();
    await store.put(`${p}a/b/data.txt`, 'hello world');
    expect(await store.stat(`${p}a/b/data.txt`)).toEqual({ key: `${p}a/b/data.txt`, size: 11 });
    expect(await store.stat(`${p}a/b/missing`)).toBeUndefined();
    expect(await store.stat(`${p}a/b`)).toBeUndefined();
    await expect(store.get(`${p}a/b`)).rejects.toBeInstanceOf(BlobNotFound);
  });

  it('lists by prefix, sorted, across many keys', async () => {
    const p = area();
    await store.put(`${p}u1/x/1.jsonl`, '1');
    await store.put(`${p}u1/x/2.jsonl`, '22');
    await store.put(`${p}u1/xy/3.jsonl`, '333');
    await store.put(`${p}u2/x/1.jsonl`, '4444');
    expect(await store.list(`${p}u1/x/`)).toEqual([{ key: `${p}u1/x/1.jsonl`, size: 1 }, { key: `${p}u1/x/2.jsonl`, size: 2 }]);
    expect((await store.list(`${p}u1/x`)).map((b) => b.key)).toEqual([`${p}u1/x/1.jsonl`, `${p}u1/x/2.jsonl`, `${p}u1/xy/3.jsonl`]);
    expect(await store.list(`${p}u3/`)).toEqual([]);

    // More keys than one page of the S3 driver, in folders whose tree order is not the keys' sort order.
    const many = ['a', 'a/b', 'a-b', 'ab', 'b'].flatMap((folder) => Array.from({ length: 5 }, (_, i) => `${p}many/${folder}/${i}.txt`));
    many.push(`${p}many/a.txt`);
    await Promise.all(many.map((key) => store.put(key, key)));
    const sorted = [...many].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(await store.list(`${p}many/`)).toEqual(sorted.map((key) => ({ key, size: Buffer.byteLength(key) })));
    expect((await store.list(`${p}many/a`)).map((b) => b.key)).toEqual(sorted.filter((key) => key.startsWith(`${p}many/a`)));
  });

  it('deletes one blob or a whole prefix, and lists everything with the empty prefix', async () => {
    const { store: own } = await driver.open();
    await own.put('u1/x/1.jsonl', '1');
    await own.put('u1/x/2.jsonl', '22');
    await own.put('u1/xy/3.jsonl', '333');
    await own.put('u2/x/1.jsonl', '4444');
    expect(await own.deletePrefix('u1/x/')).toEqual(['u1/x/1.jsonl', 'u1/x/2.jsonl']);
    expect(await own.list('')).toEqual([{ key: 'u1/xy/3.jsonl', size: 3 }, { key: 'u2/x/1.jsonl', size: 4 }]);
    expect(await own.delete('u1/xy/3.jsonl')).toBe(true);
    expect(await own.delete('u1/xy/3.jsonl')).toBe(false);
    expect(await own.deletePrefix('nothing/')).toEqual([]);
    expect(await own.deletePrefix('')).toEqual(['u2/x/1.jsonl']);
    expect(await own.list('')).toEqual([]);
  });

  it('deletes prefixes of more keys than one delete request takes (1000)', async () => {
    const p = area();
    const keys = Array.from({ length: 1005 }, (_, i) => `${p}k/${String(i).padStart(4, '0')}`);
    for (let i = 0; i < keys.length; i += 50) await Promise.all(keys.slice(i, i + 50).map((key) => store.put(key, 'x')));
    expect(await store.deletePrefix(`${p}k/`)).toEqual(keys);
    expect(await store.list(p)).toEqual([]);
  });

  it('leaves nothing behind when the body fails, early or after several parts', async () => {
    const p = area();
    const failing = new Readable({
      read() {
        this.push('partial data');
        this.destroy(new Error('client went away'));
      },
    });
    await expect(store.put(`${p}broken.csv`, failing)).rejects.toThrow('client went away');
    const late = randomMebibytes(20, new Error('connection reset by the client'));
    await expect(store.put(`${p}broken-late.bin`, late.chunks)).rejects.toThrow('connection reset by the client');
    expect(await store.stat(`${p}broken.csv`)).toBeUndefined();
    expect(await store.stat(`${p}broken-late.bin`)).toBeUndefined();
    expect(await store.list(p)).toEqual([]);
    expect(await fixture.unfinishedWrites()).toEqual([]);
  });

  it('stores a large stream whole', async () => {
    const key = `${area()}large.bin`;
    const source = randomMebibytes(40);
    expect(await store.put(key, source.chunks)).toEqual({ key, size: 40 * MiB });
    const stored = createHash('sha256');
    for await (const chunk of await store.get(key)) stored.update(chunk as Buffer);
    expect(stored.digest('hex')).toBe(source.sha256());
    expect(await store.stat(key)).toEqual({ key, size: 40 * MiB });
  });

  const invalidKeys: Array<[string, string]> = [
    ['../outside.txt', 'parent segment'],
    ['a/../../outside.txt', 'nested parent segment'],
    ['a/./b', 'dot segment'],
    ['/etc/passwd', 'absolute path'],
    ['C:/windows/x', 'drive letter'],
    ['a\\..\\b', 'backslashes'],
    ['a\0b', 'NUL byte'],
    ['', 'empty key'],
    ['a//b', 'empty segment'],
    ['x'.repeat(256), 'segment over 255 bytes'],
    [`${'abc/'.repeat(300)}z`, 'key over 1024 bytes'],
  ];
  it.each(invalidKeys)('refuses key %j (%s) for every operation', async (key) => {
    await expect(store.put(key, 'x')).rejects.toBeInstanceOf(InvalidBlobKey);
    await expect(store.get(key)).rejects.toBeInstanceOf(InvalidBlobKey);
    await expect(store.stat(key)).rejects.toBeInstanceOf(InvalidBlobKey);
    await expect(store.delete(key)).rejects.toBeInstanceOf(InvalidBlobKey);
    expect(() => store.uri(key)).toThrow(InvalidBlobKey);
  });

  it('refuses prefixes that escape', async () => {
    await expect(store.list('../')).rejects.toBeInstanceOf(InvalidBlobKey);
    await expect(store.list('a//')).rejects.toBeInstanceOf(InvalidBlobKey);
    await expect(store.deletePrefix('/etc/')).rejects.toBeInstanceOf(InvalidBlobKey);
  });

  it('maps keys to URIs and back, and no other URI to a key', async () => {
    await store.put('k/v.bin', 'x');
    expect(store.uri('k/v.bin')).toMatch(fixture.uriPattern);
    for (const key of ['k/v.bin', 'users/alice%40example.com/a b+c.txt', 'ü/ñ.json']) {
      expect(store.keyFromUri(store.uri(key))).toBe(key);
    }
    for (const uri of ['file:///etc/passwd', 's3://some-other-bucket/k/v.bin', 'https://example.com/k/v.bin', 'k/v.bin']) {
      expect(store.keyFromUri(uri)).toBeUndefined();
    }
  });

  it('passes its health check', async () => {
    await expect(store.check()).resolves.toBeUndefined();
  });
});

describe('S3 driver', () => {
  it('uploads a large stream as a multipart upload', async () => {
    const options = s3Options();
    const store = await new S3BlobStore(options).init();
    const source = randomMebibytes(20);
    await store.put('parts.bin', source.chunks);
    // S3's ETag of a multipart object is "<md5 of the part md5s>-<number of parts>": 20 MiB in 5 MiB parts.
    const head = await s3Client().send(new HeadObjectCommand({ Bucket: options.bucket, Key: 'parts.bin' }));
    expect(head.ETag).toMatch(/-4"$/);
    expect(head.ContentLength).toBe(20 * MiB);
  });

  it('gives a local file too large for 10,000 parts of 5 MiB parts large enough', async () => {
    const file = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-parts-')), 'sparse.bin');
    await fs.writeFile(file, '');
    await fs.truncate(file, 100 * 1024 * MiB); // sparse: no disk used
    try {
      const partSize = await partSizeFor(createReadStream(file));
      expect(partSize * 10_000).toBeGreaterThanOrEqual(100 * 1024 * MiB);
      expect(await partSizeFor(Readable.from(['x']))).toBe(5 * MiB);
    } finally {
      await fs.rm(path.dirname(file), { recursive: true, force: true });
    }
  });

  it('creates a missing bucket on init, also when several processes start together', async () => {
    const options = s3Options();
    await expect(s3Client().send(new HeadBucketCommand({ Bucket: options.bucket }))).rejects.toMatchObject({ $metadata: { httpStatusCode: 404 } });
    const stores = await Promise.all(Array.from({ length: 3 }, () => new S3BlobStore(options).init()));
    await s3Client().send(new HeadBucketCommand({ Bucket: options.bucket }));
    await stores[0]!.put('a.txt', 'a');
    expect(await stores[2]!.list('')).toEqual([{ key: 'a.txt', size: 1 }]);
    await new S3BlobStore(options).init(); // an existing bucket is simply used
  });

  it('fails init with a clear message on wrong credentials, naming no secret', async () => {
    const options = s3Options({ credentials: { accessKeyId: inject('servers').s3.accessKeyId, secretAccessKey: 'Wrong-Secret-123' } });
    const err = (await new S3BlobStore(options).init().catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/^access denied \(.*403\): the access key or secret is wrong/);
    expect(err.message).not.toContain('Wrong-Secret-123');
    expect(err.message).not.toContain(inject('servers').s3.secretAccessKey);
  });

  it('reports an endpoint that is down: init fails, operations and checks are ServiceUnavailable', async () => {
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const store = new S3BlobStore(s3Options({ endpoint }));
    await expect(store.init()).rejects.toThrow(/^127\.0\.0\.1:\d+ is unreachable: .*ECONNREFUSED/);
    for (const operation of [() => store.stat('a'), () => store.get('a'), () => store.list(''), () => store.put('a', 'x'), () => store.check()]) {
      await expect(operation()).rejects.toMatchObject({ dependency: 'storage', statusCode: 503, message: expect.stringMatching(/127\.0\.0\.1:\d+ .*unreachable/) });
    }
  });

  it('fails its health check when the bucket is gone', async () => {
    const store = new S3BlobStore(s3Options());
    await expect(store.check()).rejects.toBeInstanceOf(ServiceUnavailable);
    await expect(store.check()).rejects.toThrow(/does not exist/);
  });
});
