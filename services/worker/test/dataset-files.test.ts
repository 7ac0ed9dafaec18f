// A vision split's blob-URI images become local files next to it, and the records point at them.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FolderBlobStore, UnprocessableEntity } from '@ftp/platform';
import { localizeImages } from '../src/training/dataset-files.ts';

const record = (image: string, answer: string) => ({
  messages: [
    { role: 'user', content: [{ type: 'image', image }, { type: 'text', text: 'What color?' }] },
    { role: 'assistant', content: answer },
  ],
});

describe('localizeImages', () => {
  let dir: string;
  let blobs: FolderBlobStore;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'dataset-files-'));
    blobs = await new FolderBlobStore(path.join(dir, 'blobs')).init();
  });
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  it('copies each distinct image once and rewrites every split to the local paths', async () => {
    await blobs.put('u/datasets/d1/images/aa.png', 'red png');
    await blobs.put('u/datasets/d1/images/bb.png', 'blue png');
    const red = blobs.uri('u/datasets/d1/images/aa.png');
    const blue = blobs.uri('u/datasets/d1/images/bb.png');
    const train = path.join(dir, 'data', 'train.jsonl');
    const test = path.join(dir, 'data', 'test.jsonl');
    await fs.mkdir(path.dirname(train), { recursive: true });
    await fs.writeFile(train, [record(red, 'red'), record(blue, 'blue'), record('https://example.com/x.png', 'x')].map((r) => JSON.stringify(r)).join('\n') + '\n');
    await fs.writeFile(test, JSON.stringify(record(red, 'red')) + '\n');

    const copied = await localizeImages(blobs, { train, test }, path.join(dir, 'data', 'images'));

    expect(copied).toBe(2);
    const rows = (await fs.readFile(train, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    const images = rows.map((r) => r.messages[0].content[0].image as string);
    expect(images[2]).toBe('https://example.com/x.png'); // not of this store: the core reports it
    expect(await fs.readFile(images[0]!, 'utf8')).toBe('red png');
    expect(await fs.readFile(images[1]!, 'utf8')).toBe('blue png');
    expect(path.dirname(images[0]!)).toBe(path.join(dir, 'data', 'images'));
    const [testRow] = (await fs.readFile(test, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    expect(testRow.messages[0].content[0].image).toBe(images[0]);
    expect(rows[0].messages[1]).toEqual({ role: 'assistant', content: 'red' });
  });

  it('names the split, record and URI when an image is gone from storage', async () => {
    const train = path.join(dir, 'train.jsonl');
    const gone = blobs.uri('u/datasets/d1/images/gone.png');
    await fs.writeFile(train, JSON.stringify(record(gone, 'red')) + '\n');
    const failure = localizeImages(blobs, { train }, path.join(dir, 'images'));
    await expect(failure).rejects.toBeInstanceOf(UnprocessableEntity);
    await expect(failure).rejects.toThrow(`train split record 1: image ${gone} is no longer in storage`);
  });
});
