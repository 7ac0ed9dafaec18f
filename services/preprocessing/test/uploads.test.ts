// POST /datasets/upload through the real app: every accepted format, exact counts, and bad files
// refused with a 400/413/422 that leaves nothing stored.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csv, multipartBody, startService, type TestService } from '../../../test/support/preprocessing.ts';

let svc: TestService;
beforeAll(async () => {
  svc = await startService({ MAX_UPLOAD_BYTES: String(64 * 1024) });
});
afterAll(() => svc.close());

const table = [
  ['question', 'answer', 'topic'],
  ['What is 2+2?', '4', 'math'],
  ['Capital of France?', 'Paris', 'geo'],
  ['Say "hi", please', 'hi', 'chat'],
];
const objects = table.slice(1).map((r) => ({ question: r[0], answer: r[1], topic: r[2] }));

async function rawState() {
  return {
    blobs: (await svc.platform.blobs.list('raw/')).length,
    rows: (await svc.platform.db.query('SELECT dataset_id FROM raw_datasets')).length,
  };
}

describe('upload formats', () => {
  const cases: Array<[string, string | Buffer]> = [
    ['data.csv', csv(table)],
    ['data.tsv', table.map((r) => r.join('\t')).join('\n')],
    ['data.json', JSON.stringify(objects)],
    ['wrapped.json', JSON.stringify({ rows: objects })],
    ['data.jsonl', objects.map((o) => JSON.stringify(o)).join('\n')],
    [
      'data.parquet',
      Buffer.from(
        parquetWriteBuffer({
          columnData: [
            { name: 'question', data: objects.map((o) => o.question), type: 'STRING' },
            { name: 'answer', data: objects.map((o) => o.answer), type: 'STRING' },
            { name: 'topic', data: objects.map((o) => o.topic), type: 'STRING' },
          ],
        }),
      ),
    ],
  ];
  const delimiters: Record<string, string | null> = { 'data.csv': ',', 'data.tsv': '\t' };
  it.each(cases)('%s: columns, exact count and the first rows as read', async (filename, content) => {
    const res = await svc.upload(filename, content);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ filename, columns: ['question', 'answer', 'topic'], num_examples: 3, size_bytes: Buffer.byteLength(content) });
    expect(body).toMatchObject({ delimiter: delimiters[filename] ?? null, warnings: [] });
    expect(body.sample).toEqual(objects);
    expect(body.dataset_id).toMatch(/^ds_/);
    expect(body.cloud_path).toMatch(/^file:\/\/.*\/raw\/local\//);
    const key = svc.platform.blobs.keyFromUri(body.cloud_path)!;
    expect((await svc.platform.blobs.stat(key))?.size).toBe(Buffer.byteLength(content));
  });

  it('samples are the first 5 rows of a longer file and the count is exact', async () => {
    const rows = [['n', 'text'], ...Array.from({ length: 1234 }, (_, i) => [String(i), `row ${i}`])];
    const res = await svc.upload('long.csv', csv(rows));
    expect(res.json().num_examples).toBe(1234);
    expect(res.json().sample.map((r: { n: string }) => r.n)).toEqual(['0', '1', '2', '3', '4']);
  });
});

describe('bad uploads', () => {
  const bad: Array<[string, string | Buffer, number, RegExp]> = [
    ['empty.csv', '', 400, /empty/i],
    ['header-only.csv', 'question,answer\n', 400, /header but no rows/i],
    ['ragged.csv', 'a,b,c\n1,2,3\n4,5\n', 400, /row|line/i],
    ['latin1.jsonl', Buffer.from('{"a": "café"}\n', 'latin1'), 400, /not valid UTF-8 text: byte 0xe9/],
    ['broken-utf16.csv', Buffer.concat([Buffer.from('\ufeffa,b\n1,', 'utf16le'), Buffer.from([0x00, 0xd8, 0x0a, 0x00])]), 400, /not valid UTF-16 LE text/],
    ['numbers.json', '[1, 2, 3]', 400, /object/i],
    ['two-arrays.json', '{"a": [{"x": 1}], "b": [{"y": 2}]}', 400, /array/i],
    ['dupes.csv', 'q,a,q\n1,2,3\n', 400, /duplicate|"q"/i],
    ['image.png', Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64'), 400, /CSV, TSV, JSON, JSONL or Parquet/],
    ['big.csv', `a\n${'x'.repeat(70 * 1024)}\n`, 413, /MAX_UPLOAD_BYTES/],
  ];
  it.each(bad)('%s → %i, nothing stored', async (filename, content, status, message) => {
    const before = await rawState();
    const res = await svc.upload(filename, content);
    expect(res.statusCode, res.body).toBe(status);
    expect(res.json().detail).toMatch(message);
    expect(await rawState()).toEqual(before);
  });

  it('a request without a `file` part is a 422 at body.file', async () => {
    const res = await svc.upload('data.csv', csv(table), { fieldname: 'document' });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail[0].loc).toEqual(['body', 'file']);
    const json = await svc.call({ method: 'POST', url: '/datasets/upload', payload: { file: 'x' } });
    expect(json.statusCode).toBe(422);
    expect(json.json().detail[0].loc).toEqual(['body', 'file']);
  });

  it('a file name with a NUL character is a 422 at body.file, and nothing is stored', async () => {
    // PostgreSQL cannot store U+0000: this was a 500 "invalid byte sequence 0x00" after the file was written.
    const before = await rawState();
    const res = await svc.upload('data\u0000.csv', csv(table));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail).toEqual([{ loc: ['body', 'file'], msg: 'the file name must not contain the NUL character (U+0000); rename the file', type: 'string_pattern_mismatch' }]);
    expect(await rawState()).toEqual(before);
  });

  it('an upload interrupted mid-stream leaves nothing behind', async () => {
    const before = await rawState();
    await svc.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = svc.app.server.address() as AddressInfo;
    const { body, contentType } = multipartBody('cut.csv', csv([['a'], ...Array.from({ length: 2000 }, (_, i) => [String(i)])]));
    await new Promise<void>((resolve) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/datasets/upload', headers: { 'content-type': contentType, 'content-length': body.length } });
      req.on('error', () => resolve());
      req.on('response', () => resolve());
      req.write(body.subarray(0, Math.floor(body.length / 2)), () => setTimeout(() => req.destroy(), 50));
    });
    // The server notices the aborted stream asynchronously; give it a moment to clean up.
    for (let i = 0; i < 50 && (await svc.platform.blobs.list('')).length > before.blobs; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await rawState()).toEqual(before);
  });
});

describe('row key order', () => {
  it('keeps the file column order in samples, also after a round trip through the database', async () => {
    const res = await svc.upload('order.csv', csv([['zeta', 'alpha', 'mid'], ['1', '2', '3']]));
    expect(Object.keys(res.json().sample[0])).toEqual(['zeta', 'alpha', 'mid']);
    const row = await svc.platform.datasets.getRaw('local', res.json().dataset_id);
    expect(Object.keys(row!.sample[0]!)).toEqual(['zeta', 'alpha', 'mid']);
  });
});

describe('delimited text as people write it (#38)', () => {
  const upload = async (filename: string, content: string | Buffer, options: Parameters<TestService['upload']>[2] = {}) => {
    const res = await svc.upload(filename, content, options);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { dataset_id: string; columns: string[]; sample: unknown[]; num_examples: number; delimiter: string | null; warnings: string[] };
  };

  it.each([
    ['semicolons.csv', ';'],
    ['tabs.csv', '\t'],
    ['pipes.txt', '|'],
  ])('%s: the delimiter is detected, reported and recorded', async (filename, delimiter) => {
    const text = [['question', 'answer'], ['What is 2+2?', '4'], ['Capital of France?', 'Paris']].map((r) => r.join(delimiter)).join('\r\n');
    const body = await upload(filename, text);
    expect(body).toMatchObject({ delimiter, columns: ['question', 'answer'], num_examples: 2, warnings: [] });
    expect(body.sample).toEqual([{ question: 'What is 2+2?', answer: '4' }, { question: 'Capital of France?', answer: 'Paris' }]);
    expect((await svc.platform.datasets.getRaw('local', body.dataset_id))?.delimiter).toBe(delimiter);
  });

  it('keeps quoted delimiters inside fields, and reads a decimal-comma file by its semicolons', async () => {
    const quoted = await upload('quoted.csv', 'q;a\n"one; two";"x, y | z"\n');
    expect(quoted).toMatchObject({ delimiter: ';', sample: [{ q: 'one; two', a: 'x, y | z' }] });
    const prices = await upload('prices.csv', 'name;price\napple;1,5\npear;2,25\n');
    expect(prices).toMatchObject({ delimiter: ';', columns: ['name', 'price'], sample: [{ name: 'apple', price: '1,5' }, { name: 'pear', price: '2,25' }] });
  });

  it('an explicit delimiter field wins over detection, sent before or after the file', async () => {
    const text = 'name;tags,notes\nann;a,b\n';
    expect(await upload('people.csv', text)).toMatchObject({ delimiter: ',', columns: ['name;tags', 'notes'] });
    for (const fieldsFirst of [true, false]) {
      const body = await upload('people.csv', text, { fields: { delimiter: ';' }, fieldsFirst });
      expect(body, `fieldsFirst ${fieldsFirst}`).toMatchObject({ delimiter: ';', columns: ['name', 'tags,notes'], sample: [{ name: 'ann', 'tags,notes': 'a,b' }] });
    }
    expect(await upload('table.csv', 'a\tb\n1\t2\n', { fields: { delimiter: '\t' } })).toMatchObject({ delimiter: '\t', columns: ['a', 'b'] });
  });

  it.each([['semicolon'], [';;'], [''], ['\\t']])('a delimiter field %j is a 422 naming the field and what to send, and nothing is stored', async (value) => {
    for (const fieldsFirst of [true, false]) {
      const before = await rawState();
      const res = await svc.upload('data.csv', 'a;b\n1;2\n', { fields: { delimiter: value }, fieldsFirst });
      expect(res.statusCode, res.body).toBe(422);
      const [issue] = res.json().detail;
      expect(issue).toMatchObject({ loc: ['body', 'delimiter'], type: 'invalid_value' });
      expect(issue.msg).toContain(`delimiter ${JSON.stringify(value)} is not one of the delimiters read here; send "," (comma), ";" (semicolon), "|" (pipe) or a tab character`);
      expect(await rawState()).toEqual(before);
    }
  });

  it('drops a UTF-8 BOM and reads UTF-16 LE and BE with a BOM', async () => {
    const text = 'question;answer\r\nCafé?;Oui, naïve 日本\r\n';
    const le = Buffer.from(`\ufeff${text}`, 'utf16le');
    for (const content of [Buffer.from(`\ufeff${text}`), le, Buffer.from(le).swap16()]) {
      const body = await upload('bom.csv', content);
      expect(body).toMatchObject({ delimiter: ';', columns: ['question', 'answer'], sample: [{ question: 'Café?', answer: 'Oui, naïve 日本' }] });
    }
  });

  it('reads Windows-1252 (bytes that are not UTF-8) as such, never as mojibake', async () => {
    const content = Buffer.concat([Buffer.from('name,drink\nAnn,caf'), Buffer.from([0xe9]), Buffer.from(' '), Buffer.from([0x93]), Buffer.from('noir'), Buffer.from([0x94]), Buffer.from('\n')]);
    const body = await upload('drinks.csv', content);
    expect(body).toMatchObject({ delimiter: ',', sample: [{ name: 'Ann', drink: 'café \u201cnoir\u201d' }] });
  });

  it('warns when the one column it read holds another delimiter in most rows', async () => {
    const body = await upload('qa.csv', 'question;answer\nWhy?;Because.\nHow?;Thus.\n', { fields: { delimiter: ',' } });
    expect(body).toMatchObject({ delimiter: ',', columns: ['question;answer'] });
    expect(body.warnings).toEqual([
      'The file was read as one column, "question;answer", and 2 of its 2 rows contain ";". If its columns are separated by ";", upload it again with the field delimiter set to ";".',
    ]);
    const listed = (await svc.call({ method: 'GET', url: '/datasets/uploads' })).json().uploads.find((u: { dataset_id: string }) => u.dataset_id === body.dataset_id);
    expect(listed).toMatchObject({ delimiter: ',', warnings: body.warnings });
  });

  it('lists training data only: a /v1 batch\'s input and output files are no dataset upload', async () => {
    const body = await upload('train.csv', 'question,answer\nWhy?,Because.\n');
    const base = { user_id: 'local', format: 'jsonl', size_bytes: 2, num_examples: 1, columns: ['custom_id'], sample: [] };
    for (const purpose of ['batch', 'batch_output'] as const) {
      await svc.platform.datasets.insertRaw({ ...base, dataset_id: `file-${purpose}`, filename: `${purpose}.jsonl`, blob_key: `uploads/local/${purpose}.jsonl`, purpose });
    }
    const listed = (await svc.call({ method: 'GET', url: '/datasets/uploads' })).json().uploads.map((u: { dataset_id: string }) => u.dataset_id);
    expect(listed).toContain(body.dataset_id);
    expect(listed.filter((id: string) => id.startsWith('file-'))).toEqual([]);
  });

  it('reports no delimiter for JSON, and says a delimiter sent with it was not used', async () => {
    const body = await upload('rows.json', '[{"q": "a;b"}]', { fields: { delimiter: ';' } });
    expect(body).toMatchObject({ delimiter: null, warnings: ['The delimiter ";" was not used: the file is JSON, not delimited text.'] });
  });
});
