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

  it('reads semicolons, pipes and UTF-16 text, and a .tsv stays TSV unless its content says otherwise', () => {
    expect(detect('upload', 'question;answer\nWhy?;Because.\n')).toBe('csv');
    expect(detect('upload', 'question|answer\nWhy?|Because.\n')).toBe('csv');
    expect(detect('data.csv', Buffer.from('\ufeffa\tb\n1\t2\n', 'utf16le'))).toBe('tsv');
    expect(detect('data.tsv', 'a\tb;c\n1\t2;3\n')).toBe('tsv');
    expect(detect('data.tsv', 'a;b\n1;2\n')).toBe('csv');
  });

  it('refuses binary and undetectable files, naming the accepted formats', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]);
    const zip = Buffer.concat([Buffer.from('PK\x03\x04\x14\x00\x00\x00\x08\x00'), Buffer.from([0xe4, 0x9c, 0xff])]);
    for (const [name, head] of [['photo.png', png], ['data.zip', zip], ['notes.md', Buffer.from('hello\n')]] as const) {
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
    ['table.csv', 'csv', ',', tableAs.csv],
    ['table.tsv', 'tsv', '\t', tableAs.tsv],
    ['semicolons.csv', 'csv', ';', tableAs.semicolons],
    ['pipes.txt', 'csv', '|', tableAs.pipes],
    ['unicode-text.txt', 'tsv', '\t', tableAs.utf16le],
    ['utf16-big-endian.csv', 'csv', ';', tableAs.utf16be],
    ['table.json', 'json', null, tableAs.jsonArray],
    ['export.json', 'json', null, tableAs.jsonObject],
    ['table.jsonl', 'jsonl', null, tableAs.jsonl],
    ['table.parquet', 'parquet', null, tableAs.parquet],
  ] as const;

  for (const [name, format, delimiter, make] of cases) {
    it(`${name}: columns, exact count and the first five rows`, async () => {
      const file = path.join(dir, name);
      await fs.writeFile(file, make());
      const inspection = await inspectDataset(await byteSourceFromFile(file), name);
      expect(inspection).toEqual({ format, columns: [...COLUMNS], num_examples: TABLE.length, sample: TABLE.slice(0, 5), delimiter, warnings: [] });
      // Processing reads the stored file again with the delimiter the upload recorded.
      const rows: unknown[] = [];
      for await (const row of readRows(await byteSourceFromFile(file), format, { delimiter: delimiter ?? undefined })) rows.push(row);
      expect(rows).toEqual(TABLE);
      // A reader given no delimiter (a hub file) detects the same one.
      const detected: unknown[] = [];
      for await (const row of readRows(await byteSourceFromFile(file), format)) detected.push(row);
      expect(detected).toEqual(TABLE);
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
      delimiter: ',',
      warnings: [],
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

describe('delimiters', () => {
  const inspect = (name: string, text: string | Buffer, delimiter?: ',' | ';' | '\t' | '|') =>
    inspectDataset(byteSourceFromBuffer(Buffer.from(text)), name, { delimiter });

  it('detects semicolons, tabs and pipes from the content, whatever the extension', async () => {
    for (const delimiter of [';', '\t', '|'] as const) {
      const text = ['question', 'answer'].join(delimiter) + '\n' + ['Why?', 'Because.'].join(delimiter) + '\n';
      const inspection = await inspect('qa.csv', text);
      expect(inspection, JSON.stringify(delimiter)).toMatchObject({ delimiter, columns: ['question', 'answer'], sample: [{ question: 'Why?', answer: 'Because.' }] });
    }
  });

  it('keeps delimiters inside quoted fields as text', async () => {
    const inspection = await inspect('quoted.csv', 'q;a\n"one; two";"a|b, c"\n"x;y";z\n');
    expect(inspection).toMatchObject({ delimiter: ';', columns: ['q', 'a'], sample: [{ q: 'one; two', a: 'a|b, c' }, { q: 'x;y', a: 'z' }] });
  });

  it('reads a decimal-comma file as semicolon-separated', async () => {
    const inspection = await inspect('prices.csv', 'name;price\napple;1,5\npear;2,25\nplum;0,75\n');
    expect(inspection).toMatchObject({ delimiter: ';', columns: ['name', 'price'], num_examples: 3, sample: [{ name: 'apple', price: '1,5' }, { name: 'pear', price: '2,25' }, { name: 'plum', price: '0,75' }] });
  });

  it('keeps tab for a .tsv file unless the content says otherwise', async () => {
    expect((await inspect('notes.tsv', 'a\tb;c\n1\t2;3\n')).delimiter).toBe('\t');
    expect((await inspect('notes.tsv', 'a,b\n1,2\n')).delimiter).toBe(',');
    expect((await inspect('notes.tsv', 'text\nhello\n')).delimiter).toBe('\t');
  });

  it('uses a given delimiter over the detected one, and says so when the file is not delimited text', async () => {
    const text = 'name;tags,notes\nann;a,b\nbob;c,d\n';
    expect(await inspect('people.csv', text)).toMatchObject({ delimiter: ',', columns: ['name;tags', 'notes'] });
    expect(await inspect('people.csv', text, ';')).toMatchObject({ delimiter: ';', columns: ['name', 'tags,notes'], sample: [{ name: 'ann', 'tags,notes': 'a,b' }, { name: 'bob', 'tags,notes': 'c,d' }] });
    expect(await inspect('people.tsv', 'a;b\n1;2\n', '\t')).toMatchObject({ format: 'tsv', delimiter: '\t', columns: ['a;b'] });
    const json = await inspect('rows.json', '[{"a": "1"}]', ';');
    expect(json).toMatchObject({ format: 'json', delimiter: null, warnings: ['The delimiter ";" was not used: the file is JSON, not delimited text.'] });
  });

  it('warns when one column holds another delimiter in most rows', async () => {
    const misread = await inspect('qa.csv', 'question;answer\nWhy?;Because.\nHow?;Thus.\nWho?;Me.\n', ',');
    expect(misread.columns).toEqual(['question;answer']);
    expect(misread.warnings).toEqual([
      'The file was read as one column, "question;answer", and 3 of its 3 rows contain ";". ' +
        'If its columns are separated by ";", upload it again with the field delimiter set to ";".',
    ]);
    // A header without the delimiter is one column by detection too.
    const headerless = await inspect('rows.txt', 'text\na|b\nc|d\ne\n');
    expect(headerless).toMatchObject({ delimiter: ',', columns: ['text'] });
    expect(headerless.warnings[0]).toMatch(/^The file was read as one column, "text", and 2 of its 3 rows contain "\|"/);
    // Commas a one-column CSV holds are quoted, so meant; a few rows with a semicolon are prose.
    expect((await inspect('prose.csv', 'text\n"Hello, world"\n"Yes, indeed"\n')).warnings).toEqual([]);
    expect((await inspect('prose.csv', 'text\nfirst; second\nthird\nfourth\n')).warnings).toEqual([]);
  });
});

describe('encodings', () => {
  const rowsOf = async (name: string, bytes: Buffer) => {
    const inspection = await inspectDataset(byteSourceFromBuffer(bytes), name);
    const rows: unknown[] = [];
    for await (const row of readRows(byteSourceFromBuffer(bytes), inspection.format, { delimiter: inspection.delimiter ?? undefined })) rows.push(row);
    expect(rows.slice(0, inspection.sample.length)).toEqual(inspection.sample);
    return rows;
  };

  it('reads UTF-16 LE and BE with a byte order mark, in CSV, JSON Lines and JSON', async () => {
    const text = '\ufeffname;note\r\ncafé;naïve 日本 😀\r\n';
    const le = Buffer.from(text, 'utf16le');
    const be = Buffer.from(le).swap16();
    for (const bytes of [le, be]) expect(await rowsOf('notes.csv', bytes)).toEqual([{ name: 'café', note: 'naïve 日本 😀' }]);
    const jsonl = Buffer.from('\ufeff{"text": "café"}\n', 'utf16le').swap16();
    expect(await rowsOf('rows.jsonl', jsonl)).toEqual([{ text: 'café' }]);
    const json = Buffer.from('\ufeff[{"text": "café"}, {"text": "日本"}]', 'utf16le');
    expect(await rowsOf('rows.json', json)).toEqual([{ text: 'café' }, { text: '日本' }]);
  });

  it('reads a CSV that is not UTF-8 as Windows-1252, what spreadsheet programs export', async () => {
    const cp1252 = Buffer.concat([Buffer.from('name;price\ncaf'), Buffer.from([0xe9]), Buffer.from(';1,5\n'), Buffer.from([0x93]), Buffer.from('quoted'), Buffer.from([0x94, 0x3b, 0x80]), Buffer.from('2\n')]);
    expect(await rowsOf('prices.csv', cp1252)).toEqual([{ name: 'café', price: '1,5' }, { name: '\u201cquoted\u201d', price: '€2' }]);
  });

  it('decides on the first character that is not ASCII when the first 64 KiB are ASCII', async () => {
    const ascii = 'text\n' + 'fine row\n'.repeat(10_000); // 90,005 bytes: beyond the sample
    const cp1252 = Buffer.concat([Buffer.from(ascii), Buffer.from('caf'), Buffer.from([0xe9]), Buffer.from(' au lait\n')]);
    expect((await rowsOf('late.csv', cp1252)).at(-1)).toEqual({ text: 'café au lait' });
    const utf8 = Buffer.from(`${ascii}café au lait\n`);
    expect((await rowsOf('late.csv', utf8)).at(-1)).toEqual({ text: 'café au lait' });
    // The first byte past the ASCII is the last of the file (and of a read).
    const last = Buffer.concat([Buffer.from(ascii), Buffer.from('caf'), Buffer.from([0xe9])]);
    expect((await rowsOf('late.csv', last)).at(-1)).toEqual({ text: 'café' });
  });

  it('detects from the first 64 KiB and streams the rest: no read holds the file', async () => {
    const lines = ['question;answer'];
    for (let i = 0; i < 20_000; i++) lines.push(`"question ${i}; with a semicolon";answer ${i},5 €`);
    const bytes = Buffer.from(`\ufeff${lines.join('\r\n')}\r\n`, 'utf16le'); // ~1.6 MB
    const whole = byteSourceFromBuffer(bytes);
    const ranges: number[] = [];
    const source = { size: whole.size, read: (r?: { start: number; end: number }) => (r && ranges.push(r.end - r.start), whole.read(r)) };
    const inspection = await inspectDataset(source, 'big.csv');
    expect(inspection).toMatchObject({ delimiter: ';', num_examples: 20_000, columns: ['question', 'answer'] });
    expect(inspection.sample[4]).toEqual({ question: 'question 4; with a semicolon', answer: 'answer 4,5 €' });
    expect(Math.max(...ranges)).toBeLessThanOrEqual(64 * 1024);
    let count = 0;
    for await (const batch of readRowBatches(source, 'csv', { delimiter: ';' })) count += batch.length;
    expect(count).toBe(20_000);
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
