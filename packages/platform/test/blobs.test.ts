// Folder blob store, what only a folder has: empty folders pruned, the temp folder reserved, and keys that try
// to escape never reaching the filesystem. The behaviour both drivers share is in blob-store-contract.test.ts.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FolderBlobStore, InvalidBlobKey } from '@ftp/platform';

let dir: string;
let store: FolderBlobStore;

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-blobs-'));
  store = await new FolderBlobStore(path.join(dir, 'blobs')).init();
});
afterEach(() => fs.rm(dir, { recursive: true, force: true }));

describe('FolderBlobStore', () => {
  it('prunes the folders a delete leaves empty', async () => {
    await store.put('u1/x/1.jsonl', '1');
    await store.put('u1/x/2.jsonl', '22');
    await store.put('u1/xy/3.jsonl', '333');
    expect(await store.deletePrefix('u1/x/')).toEqual(['u1/x/1.jsonl', 'u1/x/2.jsonl']);
    await expect(fs.stat(path.join(dir, 'blobs', 'u1', 'x'))).rejects.toThrow();
    expect(await store.delete('u1/xy/3.jsonl')).toBe(true);
    expect(await fs.readdir(path.join(dir, 'blobs'))).toEqual(['.tmp']);
  });

  it('clears temp files a dead process left behind when it opens', async () => {
    await fs.writeFile(path.join(dir, 'blobs', '.tmp', 'abandoned.part'), 'half a blob');
    await new FolderBlobStore(path.join(dir, 'blobs')).init();
    expect(await fs.readdir(path.join(dir, 'blobs', '.tmp'))).toEqual([]);
  });

  it('refuses its temp folder as a key for every operation', async () => {
    await expect(store.put('.tmp/x', 'x')).rejects.toBeInstanceOf(InvalidBlobKey);
    await expect(store.get('.tmp/x')).rejects.toBeInstanceOf(InvalidBlobKey);
    await expect(store.stat('.tmp/x')).rejects.toBeInstanceOf(InvalidBlobKey);
    await expect(store.delete('.tmp/x')).rejects.toBeInstanceOf(InvalidBlobKey);
    expect(() => store.uri('.tmp/x')).toThrow(InvalidBlobKey);
  });

  it('writes nothing outside its folder for keys that try to escape', async () => {
    for (const key of ['../outside.txt', 'a/../../outside.txt', '/etc/passwd', 'a\\..\\b', `..${path.sep}outside.txt`]) {
      await expect(store.put(key, 'x')).rejects.toBeInstanceOf(InvalidBlobKey);
    }
    await expect(fs.stat(path.join(dir, 'outside.txt'))).rejects.toThrow();
    expect(store.keyFromUri(`file://${path.join(dir, 'outside.txt')}`)).toBeUndefined();
  });
});
