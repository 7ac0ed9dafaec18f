// Folder blob store: round trips, ranges, listing, atomic writes, and keys that try to escape the folder.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BlobNotFound, FolderBlobStore, InvalidBlobKey } from '@ftp/platform';

let dir: string;
let store: FolderBlobStore;

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-blobs-'));
  store = await new FolderBlobStore(path.join(dir, 'blobs')).init();
});
afterEach(() => fs.rm(dir, { recursive: true, force: true }));

describe('FolderBlobStore', () => {
  it('stores a stream and reads it back whole and by byte range', async () => {
    const info = await store.put('a/b/data.txt', Readable.from(['hello ', 'world']));
    expect(info).toEqual({ key: 'a/b/data.txt', size: 11 });
    expect(await text(await store.get('a/b/data.txt'))).toBe('hello world');
    expect(await text(await store.get('a/b/data.txt', { start: 6, end: 11 }))).toBe('world');
    expect(await text(await store.get('a/b/data.txt', { start: 3, end: 3 }))).toBe('');
    expect(await store.stat('a/b/data.txt')).toEqual({ key: 'a/b/data.txt', size: 11 });
    expect(await store.stat('a/b/missing')).toBeUndefined();
    await expect(store.get('a/b/missing')).rejects.toBeInstanceOf(BlobNotFound);
  });

  it('lists by prefix, deletes a prefix and prunes empty folders', async () => {
    await store.put('u1/x/1.jsonl', '1');
    await store.put('u1/x/2.jsonl', '22');
    await store.put('u1/xy/3.jsonl', '333');
    await store.put('u2/x/1.jsonl', '4444');
    expect((await store.list('u1/x/')).map((b) => b.key)).toEqual(['u1/x/1.jsonl', 'u1/x/2.jsonl']);
    expect((await store.list('u1/x')).map((b) => b.key)).toEqual(['u1/x/1.jsonl', 'u1/x/2.jsonl', 'u1/xy/3.jsonl']);
    expect(await store.deletePrefix('u1/x/')).toEqual(['u1/x/1.jsonl', 'u1/x/2.jsonl']);
    expect((await store.list('')).map((b) => b.key)).toEqual(['u1/xy/3.jsonl', 'u2/x/1.jsonl']);
    await expect(fs.stat(path.join(dir, 'blobs', 'u1', 'x'))).rejects.toThrow();
    expect(await store.delete('u1/xy/3.jsonl')).toBe(true);
    expect(await store.delete('u1/xy/3.jsonl')).toBe(false);
  });

  it('leaves nothing behind when the source stream fails mid-way', async () => {
    const failing = new Readable({
      read() {
        this.push('partial data');
        this.destroy(new Error('client went away'));
      },
    });
    await expect(store.put('up/broken.csv', failing)).rejects.toThrow('client went away');
    expect(await store.stat('up/broken.csv')).toBeUndefined();
    expect(await store.list('')).toEqual([]);
    expect(await fs.readdir(path.join(dir, 'blobs', '.tmp'))).toEqual([]);
  });

  it('maps keys to file URIs and back', async () => {
    await store.put('k/v.bin', 'x');
    const uri = store.uri('k/v.bin');
    expect(uri).toMatch(/^file:\/\/.*\/blobs\/k\/v\.bin$/);
    expect(store.keyFromUri(uri)).toBe('k/v.bin');
    expect(store.keyFromUri('file:///etc/passwd')).toBeUndefined();
    expect(store.keyFromUri('s3://bucket/k/v.bin')).toBeUndefined();
  });

  const escapes: Array<[string, string]> = [
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
    ['.tmp/x', 'reserved temp folder'],
  ];
  it.each(escapes)('refuses key %j (%s) for every operation', async (key) => {
    await expect(store.put(key, 'x')).rejects.toBeInstanceOf(InvalidBlobKey);
    await expect(store.get(key)).rejects.toBeInstanceOf(InvalidBlobKey);
    await expect(store.stat(key)).rejects.toBeInstanceOf(InvalidBlobKey);
    await expect(store.delete(key)).rejects.toBeInstanceOf(InvalidBlobKey);
    expect(() => store.uri(key)).toThrow(InvalidBlobKey);
    await expect(fs.stat(path.join(dir, 'outside.txt'))).rejects.toThrow();
  });

  it('refuses prefixes that escape', async () => {
    await expect(store.list('../')).rejects.toBeInstanceOf(InvalidBlobKey);
    await expect(store.deletePrefix('/etc/')).rejects.toBeInstanceOf(InvalidBlobKey);
  });
});
