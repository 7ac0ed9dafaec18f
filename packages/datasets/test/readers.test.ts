// Dataset readers: format detection, the same table through every format, Parquet value types, and streaming
// a large CSV with an exact count. Bad input is in readers-errors.test.ts.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BadRequest, FolderBlobStore } from '@ftp/platform';
import {
  byteSourceFromBlob,
  byteSourceFromBuffer,
  byteSourceFromFile,
  detectFormat,
  inspectDataset,
  readRowBatches,
  readRows,
  toJsonValue,
} from '../src/readers/index.ts';
import { readParquetBatches } from '../src/readers/parquet.ts';
import { COLUMNS, TABLE, tableAs } from './fixtures/reader-table.ts';

let dir: string;
beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-readers-'));
});
afterAll(() => fs.rm(dir, { recursive: true, force: true }));

const detect = (name: string, text: string | Uint8Array) => detectFormat(name, Buffer.from(text as string));

describe('detectFormat', () => {
  it('trusts content: Parquet magic, JSON arrays, JSON Lines, tab-separated text', () => {
    expect(detect('data.bin', tableAs.parquet())).toBe('parquet');
    expect(detect('data.csv', tableAs.parquet())).toBe('parquet');
    expect(detect('upload', ' \n[{"a": 1}]')).toBe('json');
    expect(detect('upload', '{"a": 1}\n{"a": 2}\n')).toBe('jsonl');
    expect(detect('upload', '{\n  "rows": [{"a": 1}]\n}')).toBe('json');
    expect(detect('upload', '{"rows": [{"a": 1}, {"a": 2}]}')).toBe('json');
    expect(detect('upload', 'a\tb, c\n1\t2\n')).toBe('tsv');
    expect(detect('upload', 'a,b\n1,2\n')).toBe('csv');
    expect(detect('notes.txt', 'just one column\nsecond row\n')).toBe('csv');
  });

  it('lets the extension break ties and overrules it where the content plainly disagrees', () => {
    expect(detect('rows.json', '{"a": 1}\n{"a": 2}\n')).toBe('jsonl');
    expect(detect('rows.jsonl', '{\n  "rows": []\n}')).toBe('json');
    expect(detect('rows.jsonl', '{"messages": [{"role": "user"}]}')).toBe('jsonl');
    expect(detect('rows.json', '{"messages": [{"role": "user"}]}')).toBe('json');
    expect(detect('rows.tsv', 'a,b\n1,2\n')).toBe('csv');
    expect(detect('rows.csv', 'a\tb\n1\t2\n')).toBe('tsv');
    expect(detect('rows.json', '42')).toBe('json');
  });

  it('refuses binary and undetectable files, naming the accepted formats', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]);
    const zip = Buffer.concat([Buffer.from('PK\x03\x04\x14\x00\x00\x00\x08\x00'), Buffer.from([0xe4, 0x9c, 0xff])]);
    const utf16 = Buffer.from('\ufeffa,b\n', 'utf16le');
    for (const [name, head] of [['photo.png', png], ['data.zip', zip], ['data.csv', utf16], ['notes.md', Buffer.from('hello\n')]] as const) {
      let error: unknown;
      try {
        detectFormat(name, head);
      } catch (err) {
        error = err;
      }
      expect(error, name).toBeInstanceOf(BadRequest);
      expect((error as Error).message).toContain('CSV, TSV, JSON, JSONL or Parquet');
      expect((error as Error).message).toContain(name);
    }
  });
});

describe('the same table in every format', () => {
  const cases = [
    ['table.csv', 'csv', tableAs.csv],
    ['table.tsv', 'tsv', tableAs.tsv],
    ['table.json', 'json', tableAs.jsonArray],
    ['export.json', 'json', tableAs.jsonObject],
    ['table.jsonl', 'jsonl', tableAs.jsonl],
    ['table.parquet', 'parquet', tableAs.parquet],
  ] as const;

  for (const [name, format, make] of cases) {
    it(`${name}: columns, exact count and the first five rows`, async () => {
      const file = path.join(dir, name);
      await fs.writeFile(file, make());
      const inspection = await inspectDataset(await byteSourceFromFile(file), name);
      expect(inspection).toEqual({ format, columns: [...COLUMNS], num_examples: TABLE.length, sample: TABLE.slice(0, 5) });
      const rows: unknown[] = [];
      for await (const row of readRows(await byteSourceFromFile(file), format)) rows.push(row);
      expect(rows).toEqual(TABLE);
    });
  }

  it('reads a Parquet blob by range, one row group after another', async () => {
    const bytes = tableAs.parquet();
    expect(parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)).row_groups.map((g) => Number(g.num_rows))).toEqual([3, 3, 1]);
    const store = await new FolderBlobStore(path.join(dir, 'blobs')).init();
    await store.put('uploads/u1/table.parquet', bytes);
    const source = await byteSourceFromBlob(store, 'uploads/u1/table.parquet');
    const batches: unknown[][] = [];
    for await (const batch of readRowBatches(source, 'parquet')) batches.push(batch);
    expect(batches.map((b) => b.length)).toEqual([3, 3, 1]);
    expect(batches.flat()).toEqual(TABLE);
  });
});

describe('Parquet values', () => {
  it('become JSON-safe: integers, timestamps, bytes and {bytes, path} image structs', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0xff, 0x00, 0xc3]);
    const pngBase64 = Buffer.from(png).toString('base64');
    const bytes = parquetWriteBuffer({
      columnData: [
        { name: 'n', data: [1n, 2n ** 60n] },
        { name: 'at', data: [new Date(Date.UTC(2024, 0, 2, 3, 4, 5)), null] },
        { name: 'raw', data: [png, null] },
        { name: 'image', data: [{ bytes: png, path: 'cat.png' }, null] },
        { name: 'score', data: [0.5, Number.NaN] },
      ],
      schema: [
        { name: 'root', num_children: 5 },
        { name: 'n', type: 'INT64', repetition_type: 'REQUIRED' },
        { name: 'at', type: 'INT64', converted_type: 'TIMESTAMP_MILLIS', repetition_type: 'OPTIONAL' },
        { name: 'raw', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL' },
        { name: 'image', num_children: 2, repetition_type: 'OPTIONAL' },
        { name: 'bytes', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL' },
        { name: 'path', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
        { name: 'score', type: 'DOUBLE', repetition_type: 'OPTIONAL' },
      ],
    });
    const inspection = await inspectDataset(byteSourceFromBuffer(new Uint8Array(bytes)), 'images.parquet');
    expect(inspection.sample).toEqual([
      { n: 1, at: '2024-01-02T03:04:05.000Z', raw: { bytes: pngBase64 }, image: { bytes: pngBase64, path: 'cat.png' }, score: 0.5 },
      { n: '1152921504606846976', at: null, raw: null, image: null, score: null },
    ]);
    expect(JSON.parse(JSON.stringify(inspection.sample))).toEqual(inspection.sample);
  });

  it('reads a large row group in slices, fetching pages through the offset index', async () => {
    const n = 20_000;
    const text = (i: number) => `row ${i} ${'x'.repeat(i % 50)}`;
    const bytes = new Uint8Array(
      parquetWriteBuffer({
        columnData: [
          { name: 'text', data: Array.from({ length: n }, (_, i) => text(i)), type: 'STRING' },
          { name: 'n', data: Array.from({ length: n }, (_, i) => i), type: 'INT32' },
        ],
        rowGroupSize: n,
        pageSize: 8192,
      }),
    );
    const whole = byteSourceFromBuffer(bytes);
    const ranges: Array<[number, number]> = [];
    const source = { size: whole.size, read: (r?: { start: number; end: number }) => (r && ranges.push([r.start, r.end]), whole.read(r)) };
    const seen: unknown[] = [];
    for await (const batch of readParquetBatches(source, 100 * 1024)) seen.push(...batch);
    expect(seen).toEqual(Array.from({ length: n }, (_, i) => ({ text: text(i), n: i })));
    // After the footer (hyparquet's first read takes the last 512 KiB, here the whole file), no read covers the
    // row group: it came in slices.
    const [, ...dataReads] = ranges;
    expect(dataReads.length).toBeGreaterThan(2);
    expect(Math.max(...dataReads.map(([start, end]) => end - start))).toBeLessThan(bytes.length / 2);
  });

  it('converts nested lists and typed arrays element by element', () => {
    expect(toJsonValue({ a: [1n, new Date(0)], b: new Float32Array([0.5]), c: { d: undefined } })).toEqual({
      a: [1, '1970-01-01T00:00:00.000Z'],
      b: [0.5],
      c: { d: null },
    });
  });
});

describe('text details', () => {
  it('strips a UTF-8 BOM, reads CRLF, quoted newlines and commas, and TSV', async () => {
    const csv = Buffer.from('\ufeffname,note\r\n"Doe, Jane","line one\r\nline two"\r\nBob,"say ""hi"""\r\n');
    expect(await inspectDataset(byteSourceFromBuffer(csv), 'people.csv')).toEqual({
      format: 'csv',
      columns: ['name', 'note'],
      num_examples: 2,
      sample: [
        { name: 'Doe, Jane', note: 'line one\r\nline two' },
        { name: 'Bob', note: 'say "hi"' },
      ],
    });
    const tsv = Buffer.from('\ufeffq\ta\nwhat is 1,2?\tthree numbers, "maybe"\n');
    expect((await inspectDataset(byteSourceFromBuffer(tsv), 'qa.tsv')).sample).toEqual([{ q: 'what is 1,2?', a: 'three numbers, "maybe"' }]);
  });

  it('reads a character split across two reads', async () => {
    // byteSourceFromBuffer hands out 64 KiB pieces; put the two bytes of "é" either side of the first cut.
    const filler = 'x'.repeat(64 * 1024 - 'text\n'.length - 1);
    const bytes = Buffer.from(`text\n${filler}é\nlast\n`);
    expect(bytes[64 * 1024 - 1]).toBe(0xc3);
    const rows = [];
    for await (const row of readRows(byteSourceFromBuffer(bytes), 'csv')) rows.push(row);
    expect(rows).toEqual([{ text: `${filler}é` }, { text: 'last' }]);
  });

  it('names empty header cells the way pandas does, so an exported index column still loads', async () => {
    const inspection = await inspectDataset(byteSourceFromBuffer(Buffer.from(',text\n0,hi\n')), 'export.csv');
    expect(inspection.columns).toEqual(['Unnamed: 0', 'text']);
  });

  it('keeps a "__proto__" column as data', async () => {
    const [row] = (await inspectDataset(byteSourceFromBuffer(Buffer.from('__proto__,b\nx,y\n')), 'odd.csv')).sample;
    expect(Object.keys(row!)).toEqual(['__proto__', 'b']);
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
  });

  it('takes the union of JSON keys in first-seen order', async () => {
    const jsonl = Buffer.from('{"a":1}\n\n{"b":2,"a":3}\r\n{"c":null}');
    const inspection = await inspectDataset(byteSourceFromBuffer(jsonl), 'mixed.jsonl');
    expect(inspection.columns).toEqual(['a', 'b', 'c']);
    expect(inspection.num_examples).toBe(3);
  });
});

describe('streaming', () => {
  it('closes the file when a reader stops early', async () => {
    for (const [name, format, content] of [
      ['early.csv', 'csv', 'text\n' + 'a row of text\n'.repeat(100_000)],
      ['early.json', 'json', JSON.stringify(Array.from({ length: 50_000 }, (_, i) => ({ i })))],
      ['early.jsonl', 'jsonl', '{"i": 1}\n'.repeat(100_000)],
    ] as const) {
      await fs.writeFile(path.join(dir, name), content);
      const inner = await byteSourceFromFile(path.join(dir, name));
      const opened: Array<import('node:stream').Readable> = [];
      const source = { size: inner.size, read: async (r?: { start: number; end: number }) => opened[opened.push(await inner.read(r)) - 1]! };
      let seen = 0;
      for await (const _ of readRows(source, format)) if (++seen === 3) break;
      await expect.poll(() => opened.every((s) => s.destroyed), { timeout: 2000 }).toBe(true);
    }
  });


  it('counts a 50,000-row CSV exactly, in batches', async () => {
    const file = path.join(dir, 'big.csv');
    const lines = ['id,prompt,response'];
    for (let i = 0; i < 50_000; i++) lines.push(`${i},"question ${i}, with a comma","answer\n${i}"`);
    await fs.writeFile(file, lines.join('\n') + '\n');
    const source = await byteSourceFromFile(file);
    let count = 0;
    let batches = 0;
    let last: Record<string, unknown> | undefined;
    for await (const batch of readRowBatches(source, 'csv')) {
      count += batch.length;
      batches++;
      last = batch.at(-1);
    }
    expect(count).toBe(50_000);
    expect(batches).toBeGreaterThan(1);
    expect(last).toEqual({ id: '49999', prompt: 'question 49999, with a comma', response: 'answer\n49999' });
    expect((await inspectDataset(source, 'big.csv')).num_examples).toBe(50_000);
  });
});
