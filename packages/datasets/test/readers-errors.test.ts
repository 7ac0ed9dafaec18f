// Dataset readers on bad input: every failure is a BadRequest whose message names the row, line or byte and
// says what was expected.
import { describe, expect, it } from 'vitest';
import { BadRequest } from '@ftp/platform';
import { byteSourceFromBuffer, inspectDataset, MAX_ROW_BYTES } from '../src/readers/index.ts';
import { lineBatches, LineTooLong } from '../src/readers/lines.ts';
import { tableAs } from './fixtures/reader-table.ts';

/** The BadRequest that inspecting `content` as `filename` throws. */
async function refusal(filename: string, content: string | Uint8Array): Promise<BadRequest> {
  const bytes = typeof content === 'string' ? Buffer.from(content) : content;
  try {
    await inspectDataset(byteSourceFromBuffer(bytes), filename);
  } catch (err) {
    expect(err).toBeInstanceOf(BadRequest);
    return err as BadRequest;
  }
  throw new Error(`${filename} was accepted`);
}

describe('empty files', () => {
  it('refuses 0 bytes and whitespace-only files in every text format', async () => {
    expect((await refusal('data.csv', '')).message).toMatch(/empty \(0 bytes\)/);
    expect((await refusal('data.parquet', '')).message).toMatch(/empty \(0 bytes\)/);
    for (const name of ['data.csv', 'data.tsv', 'data.json', 'data.jsonl', 'data']) {
      expect((await refusal(name, ' \n\t\r\n  ')).message, name).toMatch(/only whitespace/);
    }
  });
});

describe('CSV and TSV', () => {
  it('refuses a header with no rows', async () => {
    expect((await refusal('data.csv', 'prompt,response\r\n')).message).toBe('The CSV file has a header but no rows; upload a CSV, TSV, JSON, JSONL or Parquet file with at least one row.');
    expect((await refusal('data.tsv', 'prompt\tresponse\n\n')).message).toBe('The TSV file has a header but no rows; upload a CSV, TSV, JSON, JSONL or Parquet file with at least one row.');
  });

  it('names the row and line of a ragged row', async () => {
    const lines = ['a,b,c', '1,2,3', '"multi\nline",2,3', ...Array(4).fill('1,2,3'), '1,2,3,4', '1,2,3'];
    expect((await refusal('data.csv', lines.join('\n'))).message).toMatch(/^CSV row 7 \(line 9\) has 4 fields, the header has 3\./);
  });

  it('names repeated header columns', async () => {
    expect((await refusal('data.csv', 'text,label,text,label\n1,2,3,4\n')).message).toBe(
      'The CSV header repeats column names: "text" (columns 1 and 3), "label" (columns 2 and 4). ' +
        'Rename the columns so each name is unique.',
    );
  });

  it('says where a quote is left open', async () => {
    expect((await refusal('data.csv', 'a,b\n1,2\n3,"never closed\n4,5\n')).message).toMatch(/ends inside a quoted field in row 2/);
  });
});

describe('invalid text', () => {
  it('gives the byte offset and line of a bad byte in UTF-8, even past the first read', async () => {
    // The first 64 KiB hold UTF-8 ("é"), so the file is UTF-8 and a byte that is not is an error, not another encoding.
    const head = Buffer.from('text\ncafé\n' + 'fine row\n'.repeat(10_000)); // beyond the first 64 KiB piece
    const bad = Buffer.concat([head, Buffer.from('caf'), Buffer.from([0xe9]), Buffer.from(' au lait\n')]);
    const message = (await refusal('mixed.csv', bad)).message;
    expect(message).toContain(`byte 0xe9 at byte offset ${head.length + 3} (line 10003)`);
    expect(message).toContain('UTF-8');
  });

  it('refuses JSON that is not UTF-8 as an encoding problem, not as binary', async () => {
    expect((await refusal('latin1.jsonl', Buffer.from('{"name": "café"}\n', 'latin1'))).message).toMatch(/not valid UTF-8 text: byte 0xe9 at byte offset 13 \(line 1\)/);
  });

  it('refuses UTF-16 that breaks, and UTF-32, naming the encoding', async () => {
    const unpaired = Buffer.concat([Buffer.from('\ufeffa,b\n1,', 'utf16le'), Buffer.from([0x00, 0xd8]), Buffer.from('x\n', 'utf16le')]);
    expect((await refusal('data.csv', unpaired)).message).toMatch(/^The file starts with a UTF-16 LE byte order mark but is not valid UTF-16 LE text/);
    const odd = Buffer.concat([Buffer.from('\ufeffa,b\n1,2\n', 'utf16le').swap16(), Buffer.from([0x41])]);
    expect((await refusal('data.csv', odd)).message).toMatch(/not valid UTF-16 BE text/);
    expect((await refusal('data.csv', Buffer.from([0xff, 0xfe, 0, 0, 0x61, 0, 0, 0]))).message).toMatch(/UTF-32/);
  });

  it('refuses UTF-16 whitespace as empty', async () => {
    expect((await refusal('data.csv', Buffer.from('\ufeff \r\n ', 'utf16le'))).message).toMatch(/only whitespace/);
  });

  it('catches a character cut off at the end of the file and bad bytes in JSON', async () => {
    const cut = Buffer.concat([Buffer.from('{"a": "caf'), Buffer.from([0xc3])]);
    expect((await refusal('x.jsonl', cut)).message).toMatch(/ends in the middle of a character at byte offset 10 \(line 1\)/);
    const overlong = Buffer.concat([Buffer.from('[{"a": "'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}]')]);
    expect((await refusal('x.json', overlong)).message).toMatch(/byte 0xc0 at byte offset 8 \(line 1\)/);
  });
});

describe('JSON that is not rows', () => {
  const cases: Array<[string, RegExp]> = [
    ['42', /^The JSON file holds a number, not rows; expected an array of row objects/],
    ['"hello"', /^The JSON file holds a string, not rows/],
    ['[1, 2, 3]', /^Row 1 of the top-level JSON array is a number; every row must be an object/],
    ['[{"a": 1}, ["x"]]', /^Row 2 of the top-level JSON array is an array/],
    ['{"train": [{"a": 1}], "test": [{"a": 2}]}', /more than one array field \("train" and "test"\)/],
    ['{"name": "x", "count": 2}', /^The JSON object has no array field/],
    ['{"rows": ["a", "b"]}', /^Row 1 of the JSON field "rows" is a string/],
    ['[]', /^The JSON array is empty; the file has no rows\./],
  ];
  for (const [text, expected] of cases) {
    it(`refuses ${text}`, async () => {
      expect((await refusal('data.json', text)).message).toMatch(expected);
    });
  }

  it('names the line and column of a syntax error', async () => {
    const text = '[\n  {"a": 1},\n  {"a": 2,,}\n]';
    expect((await refusal('data.json', text)).message).toMatch(/^The JSON is malformed at line 3, column 11: /);
    expect((await refusal('data.json', '[{"a": 1}')).message).toMatch(/^The JSON is malformed at line 1/);
  });
});

describe('JSONL', () => {
  it('names the broken line', async () => {
    const text = '{"a": 1}\n\n{"a": 2\n{"a": 3}\n';
    expect((await refusal('data.jsonl', text)).message).toMatch(/^JSONL line 3 is not valid JSON \(.+\); each line must hold one JSON object\.$/);
  });

  it('refuses a line that is not an object', async () => {
    expect((await refusal('data.jsonl', '{"a": 1}\n[1, 2]\n')).message).toMatch(/^JSONL line 2 is an array, not an object/);
  });

  it('refuses a string with a lone surrogate, naming the line and the field (the tokenizer cannot encode it)', async () => {
    const text = '{"messages": [{"role": "user", "content": "fine \\ud83d\\ude00"}]}\n{"messages": [{"role": "user", "content": "bad \\ud800 here"}]}\n';
    expect((await refusal('data.jsonl', text)).message).toBe(
      'JSONL line 2: the string at messages[0].content holds a lone UTF-16 surrogate (an unpaired \\ud800–\\udfff escape), which is no character; remove or fix it',
    );
    expect((await refusal('data.json', '[{"a": "ok"}, {"b": ["\\udc00"]}]')).message).toMatch(/^Row 2 of the JSON file: the string at b\[0\] holds a lone UTF-16 surrogate/);
  });
});

describe('line limits', () => {
  // A line is refused at the limit while it is read, never built whole: a 600 MiB line with no newline once ended the
  // process (a string beyond V8's limit). MAX_ROW_BYTES is 32 MiB; lineBatches takes a lower bound to test it cheaply.
  it('refuses a line over the limit by number, whatever the chunks, and reads lines at the limit', async () => {
    const chunks = (text: string, size: number) => (async function* () {
      for (let at = 0; at < text.length; at += size) yield text.slice(at, at + size);
    })();
    const read = async (text: string, size: number) => {
      const out: Array<[number, string]> = [];
      for await (const { first, lines } of lineBatches(chunks(text, size), { maxChars: 10 })) lines.forEach((l, i) => out.push([first + i, l]));
      return out;
    };
    expect(await read('a\n0123456789\n\nb', 3)).toEqual([[1, 'a'], [2, '0123456789'], [3, ''], [4, 'b']]);
    for (const size of [1, 4, 100]) {
      await expect(read('a\nb\n' + 'x'.repeat(11) + '\nc\n', size)).rejects.toThrow('JSONL line 3 is longer than 10 characters; rows must be smaller (is a newline missing?).');
      // No newline at all: refused as soon as the limit is passed, not at the end of the input.
      const endless = (async function* () {
        for (;;) yield 'y'.repeat(size);
      })();
      await expect((async () => {
        for await (const _ of lineBatches(endless, { maxChars: 10 })) void _;
      })()).rejects.toBeInstanceOf(LineTooLong);
    }
  });

  it('refuses a JSONL upload with a line over 32 MiB with its number', async () => {
    const text = '{"a": 1}\n' + `{"a": "${'x'.repeat(MAX_ROW_BYTES)}"}\n`;
    expect((await refusal('data.jsonl', text)).message).toBe('JSONL line 2 is longer than 32 MiB; rows must be smaller (is a newline missing?).');
  });
});

describe('Parquet', () => {
  it('refuses a truncated file', async () => {
    const whole = tableAs.parquet();
    const message = (await refusal('data.parquet', whole.subarray(0, whole.length - 20))).message;
    expect(message).toMatch(/^The Parquet footer cannot be read \(.+\); the file may be truncated or corrupt/);
  });

  it('refuses a file whose data pages are corrupt', async () => {
    const bytes = Buffer.from(tableAs.parquet());
    bytes.fill(0x07, 4, 60); // the first row group's pages
    expect((await refusal('data.parquet', bytes)).message).toMatch(/^Row group 1 of the Parquet file cannot be read/);
  });

  it('refuses a ".parquet" that is not Parquet, naming the accepted formats', async () => {
    const message = (await refusal('data.parquet', Buffer.from([0x00, 0x01, 0x02, 0xff]))).message;
    expect(message).toMatch(/"PAR1".*CSV, TSV, JSON, JSONL or Parquet/);
  });
});
