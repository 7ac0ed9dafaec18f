// POST /datasets/process and the processed-dataset resources, through the real app and real storage.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csv, PNG_1X1, readSplit, startService, type TestService } from '../../../test/support/preprocessing.ts';

let svc: TestService;
let qa: string; // dataset_id of a 40-row question/answer upload
beforeAll(async () => {
  svc = await startService();
  const rows = [['question', 'answer', 'context'], ...Array.from({ length: 40 }, (_, i) => [`What is  ${i} + ${i}?\t `, `  ${2 * i}`, `ctx ${i}`])];
  qa = (await svc.upload('qa.csv', csv(rows))).json().dataset_id;
});
afterAll(() => svc.close());

const lm = (overrides: Record<string, unknown> = {}, config: Record<string, unknown> = {}) => ({
  dataset_name: 'qa',
  dataset_id: qa,
  config: {
    field_mappings: {
      system_field: { type: 'template', value: 'You answer arithmetic.' },
      user_field: { type: 'template', value: 'Q: {question} ({context})' },
      assistant_field: { type: 'column', value: 'answer' },
    },
    ...config,
  },
  ...overrides,
});

describe('language_modeling', () => {
  it('maps templates and columns to ChatML, normalises whitespace, and splits with a seed', async () => {
    const res = await svc.process(lm({}, { split_config: { type: 'manual_split', test_size: 0.25 } }));
    expect(res.statusCode, res.body).toBe(200);
    const result = res.json();
    expect(result).toMatchObject({ dataset_name: 'qa', dataset_source: 'upload', dataset_subset: 'default', modality: 'text', num_examples: 40, splits: ['train', 'test'] });
    const [train, test] = result.full_splits;
    expect([train.split_name, train.num_rows, test.split_name, test.num_rows]).toEqual(['train', 30, 'test', 10]);
    const trainRecords = await readSplit(svc.platform, train.path);
    const testRecords = await readSplit(svc.platform, test.path);
    expect(trainRecords).toHaveLength(30);
    expect(testRecords).toHaveLength(10);
    expect(train.samples).toEqual(trainRecords.slice(0, 5));
    const first = trainRecords[0] as { messages: Array<{ role: string; content: string }> };
    expect(first.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
    expect(first.messages[1]!.content).toMatch(/^Q: What is \d+ \+ \d+\? \(ctx \d+\)$/);
    expect(first.messages[2]!.content).toMatch(/^\d+$/);
    // Every source row lands in exactly one split.
    const users = [...trainRecords, ...testRecords].map((r) => (r as typeof first).messages[1]!.content);
    expect(new Set(users).size).toBe(40);

    const again = (await svc.process(lm({}, { split_config: { type: 'manual_split', test_size: 0.25 } }))).json();
    expect(await readSplit(svc.platform, again.full_splits[1].path)).toEqual(testRecords);
  });

  it('keeps text as it is when normalize_whitespace is false; no_split with a sample', async () => {
    const res = await svc.process(lm({}, { normalize_whitespace: false, split_config: { type: 'no_split', sample_size: 7 } }));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().full_splits.map((s: { split_name: string; num_rows: number }) => [s.split_name, s.num_rows])).toEqual([['train', 7]]);
    const records = await readSplit(svc.platform, res.json().full_splits[0].path);
    expect((records[0] as { messages: Array<{ content: string }> }).messages[2]!.content).toMatch(/^ {2}\d+$/);
  });

  it('test_size as a row count', async () => {
    const res = await svc.process(lm({}, { split_config: { type: 'manual_split', test_size: 3 } }));
    expect(res.json().full_splits.map((s: { num_rows: number }) => s.num_rows)).toEqual([37, 3]);
  });
});

describe('prompt_only and preference', () => {
  it('prompt_only keeps every source column beside the prompt', async () => {
    const res = await svc.process({
      dataset_name: 'prompts', dataset_id: qa, processing_mode: 'prompt_only',
      config: { field_mappings: { user_field: { type: 'column', value: 'question' } } },
    });
    expect(res.statusCode, res.body).toBe(200);
    const [record] = await readSplit(svc.platform, res.json().full_splits[0].path);
    expect(record).toMatchObject({ prompt: [{ role: 'user', content: 'What is 0 + 0?' }], question: 'What is  0 + 0?\t ', answer: '  0', context: 'ctx 0' });
  });

  it('preference gives prompt, chosen and rejected', async () => {
    const res = await svc.process({
      dataset_name: 'prefs', dataset_id: qa, processing_mode: 'preference',
      config: {
        field_mappings: {
          user_field: { type: 'column', value: 'question' },
          chosen_field: { type: 'column', value: 'answer' },
          rejected_field: { type: 'template', value: 'I do not know ({context})' },
        },
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    const [record] = await readSplit(svc.platform, res.json().full_splits[0].path);
    expect(record).toEqual({
      prompt: [{ role: 'user', content: 'What is 0 + 0?' }],
      chosen: [{ role: 'assistant', content: '0' }],
      rejected: [{ role: 'assistant', content: 'I do not know (ctx 0)' }],
    });
  });
});

describe('images', () => {
  it('stores each distinct image once and writes image + text parts; modality vision', async () => {
    const rows = [['img', 'caption'], [PNG_1X1, 'a dot'], [`data:image/png;base64,${PNG_1X1}`, 'the same dot']];
    const id = (await svc.upload('pics.csv', csv(rows))).json().dataset_id;
    const res = await svc.process({
      dataset_name: 'pics', dataset_id: id,
      config: {
        field_mappings: {
          user_field: [{ type: 'image', value: 'img' }, { type: 'template', value: 'Describe: {caption}' }],
          assistant_field: { type: 'column', value: 'caption' },
        },
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().modality).toBe('vision');
    const records = await readSplit(svc.platform, res.json().full_splits[0].path);
    const parts = (records[0] as { messages: Array<{ content: Array<{ type: string; image?: string; text?: string }> }> }).messages[0]!.content;
    expect(parts.map((p) => p.type)).toEqual(['image', 'text']);
    expect(parts[1]!.text).toBe('Describe: a dot');
    const imageKey = svc.platform.blobs.keyFromUri(parts[0]!.image!)!;
    expect(imageKey).toMatch(/images\/[0-9a-f]{64}\.png$/);
    const images = await svc.platform.blobs.list(imageKey.slice(0, imageKey.indexOf('images/') + 7));
    expect(images).toHaveLength(1);
  });

  it('an image column holding text is a 422 naming the row, and nothing is kept', async () => {
    const rows = [['img', 'caption'], [PNG_1X1, 'ok'], ['just some words', 'bad']];
    const id = (await svc.upload('badpics.csv', csv(rows))).json().dataset_id;
    const before = (await svc.platform.blobs.list('processed/')).length;
    const res = await svc.process({
      dataset_name: 'badpics', dataset_id: id,
      config: { field_mappings: { user_field: [{ type: 'image', value: 'img' }], assistant_field: { type: 'column', value: 'caption' } } },
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail[0]).toMatchObject({ loc: ['body', 'config', 'field_mappings', 'user_field', '0'], type: 'not_an_image' });
    expect(res.json().detail[0].msg).toMatch(/row 2, column "img"/);
    expect((await svc.platform.blobs.list('processed/')).length).toBe(before);
  });
});

describe('bad process requests', () => {
  const fm = ['body', 'config', 'field_mappings'];
  const sc = ['body', 'config', 'split_config'];
  const cases: Array<[string, () => Record<string, unknown>, string[], RegExp]> = [
    ['unknown column', () => lm({}, { field_mappings: { user_field: { type: 'column', value: 'nope' }, assistant_field: { type: 'column', value: 'answer' } } }), [...fm, 'user_field', 'value'], /"nope" does not exist.*question, answer, context/],
    ['unknown column in a template', () => lm({}, { field_mappings: { user_field: { type: 'template', value: 'Q: {qestion}' }, assistant_field: { type: 'column', value: 'answer' } } }), [...fm, 'user_field', 'value'], /"qestion" does not exist/],
    ['unbalanced brace', () => lm({}, { field_mappings: { user_field: { type: 'template', value: 'Q: {question' }, assistant_field: { type: 'column', value: 'answer' } } }), [...fm, 'user_field', 'value'], /unbalanced "\{"/],
    ['stray closing brace', () => lm({}, { field_mappings: { user_field: { type: 'template', value: 'Q: question}' }, assistant_field: { type: 'column', value: 'answer' } } }), [...fm, 'user_field', 'value'], /unbalanced "\}"/],
    ['missing assistant_field', () => lm({}, { field_mappings: { user_field: { type: 'column', value: 'question' } } }), [...fm, 'assistant_field'], /required/],
    ['split that does not exist', () => lm({}, { split_config: { type: 'no_split', split: 'validation' } }), [...sc, 'split'], /"validation" does not exist; the dataset has: train/],
    ['hub_split on an upload', () => lm({}, { split_config: { type: 'hub_split', train_split: 'train', test_split: 'test' } }), [...sc, 'test_split'], /"test" does not exist/],
    ['sample_size larger than the data', () => lm({}, { split_config: { type: 'manual_split', sample_size: 41 } }), [...sc, 'sample_size'], /larger than the 40 rows/],
    ['test_size 0', () => lm({}, { split_config: { type: 'manual_split', test_size: 0 } }), [...sc, 'test_size'], /.+/],
    ['test_size equal to the rows', () => lm({}, { split_config: { type: 'manual_split', test_size: 40 } }), [...sc, 'test_size'], /below the 40 rows/],
    ['test_size fraction leaving no train rows', () => lm({}, { split_config: { type: 'manual_split', test_size: 0.999 } }), [...sc, 'test_size'], /both splits need at least one row/],
    ['an LLM augmentation on a server without LLM_API_BASE', () => lm({}, { augmentation_config: { use_paraphrasing: true, llm_api_key: 'sk-x' } }), ['body', 'config', 'augmentation_config', 'use_paraphrasing'], /no LLM_API_BASE and LLM_MODEL: set LLM_API_BASE and LLM_MODEL/],
    ['an LLM augmentation without llm_api_key', () => lm({}, { augmentation_config: { use_back_translation: true } }), ['body', 'config', 'augmentation_config', 'llm_api_key'], /use_back_translation needs llm_api_key/],
    ['synthesis without synthesis_ratio', () => lm({}, { augmentation_config: { use_synthesis: true, llm_api_key: 'sk-x' } }), ['body', 'config', 'augmentation_config', 'synthesis_ratio'], /needs synthesis_ratio/],
  ];
  it.each(cases)('%s → 422 at the field, nothing stored', async (_name, body, loc, msg) => {
    const before = (await svc.platform.blobs.list('processed/')).length;
    const res = await svc.process(body());
    expect(res.statusCode, res.body).toBe(422);
    const issue = res.json().detail.find((d: { loc: string[] }) => d.loc.join('.') === loc.join('.'));
    expect(issue, res.body).toBeDefined();
    expect(issue.msg).toMatch(msg);
    expect((await svc.platform.blobs.list('processed/')).length).toBe(before);
  });

  it('an unknown dataset id is a 404', async () => {
    const res = await svc.process(lm({ dataset_id: 'ds_doesnotexist' }));
    expect(res.statusCode).toBe(404);
  });
});

describe('augmentation with EDA', () => {
  const QUESTIONS = [
    'How do I reset my password quickly?', 'Where can I find the nearest train station?', 'Why does my computer run so slowly?',
    'What should I cook for a healthy dinner?', 'How can I improve my writing style?', 'Which book should I read next summer?',
    'Visit https://example.com/help before 2024-05-01 and call 555-0100 about the 15% discount.', 'How do plants grow in dark rooms?',
    'Can you explain how a bicycle gear works?', 'What makes the ocean water salty?', 'How do I keep my garden green during winter?',
    'Why do cats sleep during the day?', 'Run `npm install` and then open the settings page, please.', 'When is the best time to plant tomatoes?',
    'How can a small team write better software?', 'Where do migrating birds spend the cold months?', 'What is a good way to learn a language?',
    'How do I fix a leaking kitchen tap?', 'Why is the sky blue on clear days?', 'How should I prepare for a job interview?',
  ];
  let support: string;
  beforeAll(async () => {
    const rows = [['question', 'answer'], ...QUESTIONS.map((q, i) => [q, `Here is a careful answer number ${i} with useful advice.`])];
    support = (await svc.upload('support.csv', csv(rows))).json().dataset_id;
  });
  const eda = (factor: number) => ({
    dataset_name: 'support-eda',
    dataset_id: support,
    config: {
      field_mappings: {
        system_field: { type: 'template', value: 'You are a helpful support agent.' },
        user_field: { type: 'template', value: 'Customer asks: {question}' },
        assistant_field: { type: 'column', value: 'answer' },
      },
      split_config: { type: 'manual_split', test_size: 5 },
      augmentation_config: { use_eda: true, augmentation_factor: factor },
    },
  });
  type Rec = { messages: Array<{ role: string; content: string }>; metadata?: { augmented: string; source_index: number } };

  it('adds new train rows that differ from their sources, keeps roles, system prompt and template text, and never touches test', async () => {
    const res = await svc.process(eda(2));
    expect(res.statusCode, res.body).toBe(200);
    const result = res.json();
    const [train, test] = result.full_splits;
    const records = (await readSplit(svc.platform, train.path)) as Rec[];
    const originals = records.filter((r) => !r.metadata);
    const added = records.filter((r) => r.metadata);
    expect(originals).toHaveLength(15);
    expect(result.augmentation).toEqual({ eda: { added: added.length, dropped: 15 - added.length } });
    expect(added.length).toBeGreaterThanOrEqual(14);
    expect(train.num_rows).toBe(15 + added.length);

    records.forEach((record, at) => {
      if (!record.metadata) return;
      expect(record.metadata.augmented).toBe('eda');
      // A new row follows its source row (or the other new rows of it).
      const source = records.slice(0, at).reverse().find((r) => !r.metadata)!;
      const sourceQuestion = source.messages[1]!.content.replace('Customer asks: ', '');
      expect(QUESTIONS.indexOf(sourceQuestion)).toBe(record.metadata.source_index);
      expect(record.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
      expect(record.messages[0]!.content).toBe('You are a helpful support agent.');
      expect(record.messages[1]!.content.startsWith('Customer asks: ')).toBe(true);
      expect(record.messages.slice(1).map((m) => m.content)).not.toEqual(source.messages.slice(1).map((m) => m.content));
      // URLs, dates, numbers and code keep their text.
      for (const kept of ['https://example.com/help', '2024-05-01', '555-0100', '15%', '`npm install`']) {
        if (source.messages[1]!.content.includes(kept)) expect(record.messages[1]!.content).toContain(kept);
      }
    });

    // The test split is what processing without augmentation gives.
    const plain = (await svc.process({ ...eda(2), config: { ...eda(2).config, augmentation_config: undefined } })).json();
    expect(await readSplit(svc.platform, test.path)).toEqual(await readSplit(svc.platform, plain.full_splits[1].path));
    expect(plain.augmentation).toBeUndefined();

    // Seeded: the same request gives the same rows; GET /datasets/{id} reports the counts.
    const again = (await svc.process(eda(2))).json();
    expect(await readSplit(svc.platform, again.full_splits[0].path)).toEqual(records);
    const got = await svc.call({ url: `/datasets/${result.processed_dataset_id}` });
    expect(got.json().augmentation).toEqual(result.augmentation);
  });

  it('keeps a short answer (a label) as it is: only the question changes', async () => {
    const labels = ['billing', 'technical support', 'account'];
    const rows = [['question', 'team'], ...QUESTIONS.map((q, i) => [q, labels[i % 3]!])];
    const routing = (await svc.upload('routing.csv', csv(rows))).json().dataset_id;
    const request = eda(3);
    request.dataset_id = routing;
    request.config.field_mappings.assistant_field = { type: 'column', value: 'team' };
    const result = (await svc.process(request)).json();
    const records = (await readSplit(svc.platform, result.full_splits[0].path)) as Rec[];
    const added = records.filter((r) => r.metadata);
    expect(added.length).toBeGreaterThanOrEqual(25);
    for (const record of added) expect(record.messages[2]!.content).toBe(labels[record.metadata!.source_index % 3]);
  });

  it('grows train to about factor × rows: 1.4 over 15 rows adds 6', async () => {
    const result = (await svc.process(eda(1.4))).json();
    const { added, dropped } = result.augmentation.eda;
    expect(added + dropped).toBe(6);
    expect(result.full_splits[0].num_rows).toBe(15 + added);
  });
});

describe('list, get, delete', () => {
  it('lists newest first, reads one, deletes processed files only', async () => {
    const a = (await svc.process(lm({ dataset_name: 'first' }))).json();
    const b = (await svc.process(lm({ dataset_name: 'second' }, { split_config: { type: 'manual_split' } }))).json();
    const list = (await svc.call({ url: '/datasets' })).json().datasets;
    expect(list[0].processed_dataset_id).toBe(b.processed_dataset_id);
    expect(list[1].processed_dataset_id).toBe(a.processed_dataset_id);
    expect(list[0]).toMatchObject({ dataset_name: 'second', num_examples: 40, splits: ['train', 'test'] });

    const one = await svc.call({ url: `/datasets/${b.processed_dataset_id}` });
    expect(one.statusCode).toBe(200);
    expect(one.json().splits.map((s: { split_name: string; num_rows: number }) => [s.split_name, s.num_rows])).toEqual([['train', 36], ['test', 4]]);

    const rawBefore = await svc.platform.blobs.list('raw/');
    const del = await svc.call({ method: 'DELETE', url: `/datasets/${b.processed_dataset_id}` });
    expect(del.statusCode).toBe(200);
    expect(del.json()).toMatchObject({ dataset_name: 'second', deleted: true, deleted_files_count: 2 });
    expect(del.json().deleted_resources).toHaveLength(3);
    for (const uri of del.json().deleted_resources.slice(1)) expect(await svc.platform.blobs.stat(svc.platform.blobs.keyFromUri(uri)!)).toBeUndefined();
    expect(await svc.platform.blobs.list('raw/')).toEqual(rawBefore);
    expect((await svc.call({ url: `/datasets/${b.processed_dataset_id}` })).statusCode).toBe(404);
    expect((await svc.call({ method: 'DELETE', url: `/datasets/${b.processed_dataset_id}` })).statusCode).toBe(404);
    // The raw upload is still usable.
    expect((await svc.process(lm({ dataset_name: 'third' }))).statusCode).toBe(200);
  });

  it('health reports every dependency', async () => {
    const res = await svc.call({ url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', service: 'preprocessing', version: '2.0.0', checks: { db: 'ok', storage: 'ok', queue: 'ok' } });
  });
});

describe('tools_field', () => {
  const WEATHER = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
  const process = (id: string, tools: Record<string, unknown>, mode?: string) => svc.process({
    dataset_name: 'tools', dataset_id: id, ...(mode ? { processing_mode: mode } : {}),
    config: { field_mappings: { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' }, tools_field: tools } },
  });

  it('keeps the tools a column holds (a JSON string in CSV, an array in JSONL) on each record', async () => {
    const fromCsv = (await svc.upload('tools.csv', csv([['question', 'answer', 'tools'], ['Weather?', 'Ask me.', JSON.stringify([WEATHER])]]))).json().dataset_id;
    const jsonl = `${JSON.stringify({ question: 'Weather?', answer: 'Ask me.', tools: [WEATHER] })}\n`;
    const fromJsonl = (await svc.upload('tools.jsonl', jsonl)).json().dataset_id;
    for (const id of [fromCsv, fromJsonl]) {
      const res = await process(id, { type: 'column', value: 'tools' });
      expect(res.statusCode, res.body).toBe(200);
      expect(await readSplit(svc.platform, res.json().full_splits[0].path)).toEqual([
        { messages: [{ role: 'user', content: 'Weather?' }, { role: 'assistant', content: 'Ask me.' }], tools: [WEATHER] },
      ]);
    }
  });

  it('refuses a cell that is not a list of tools with its row, and a mapping that is not a column', async () => {
    const bad = JSON.stringify([{ type: 'function', function: { name: 'get weather' } }]);
    const id = (await svc.upload('bad-tools.csv', csv([['question', 'answer', 'tools'], ['a', 'b', JSON.stringify([WEATHER])], ['c', 'd', bad]]))).json().dataset_id;
    const res = await process(id, { type: 'column', value: 'tools' });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail).toEqual([{ loc: ['body', 'config', 'field_mappings', 'tools_field'], msg: 'row 2: column "tools"[0].function.name must be 1 to 64 letters, digits, _ or -', type: 'value_error' }]);
    const template = await process(id, { type: 'template', value: '{tools}' });
    expect(template.json().detail[0]).toMatchObject({ loc: ['body', 'config', 'field_mappings', 'tools_field', 'type'] });
    const unknown = await process(id, { type: 'column', value: 'functions' });
    expect(unknown.json().detail[0].msg).toMatch(/^column "functions" does not exist/);
  });
});

describe('delimited uploads and echoed turns (#38)', () => {
  const fm = ['body', 'config', 'field_mappings'];
  const qaRequest = (datasetId: string, user: Record<string, string>, assistant: Record<string, string>) => ({
    dataset_name: 'qa', dataset_id: datasetId, config: { field_mappings: { user_field: user, assistant_field: assistant } },
  });
  const uploadOf = async (filename: string, content: string | Buffer, fields?: Record<string, string>) => {
    const res = await svc.upload(filename, content, { fields });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { dataset_id: string; columns: string[]; delimiter: string };
  };
  const turns = async (res: { json(): { full_splits: Array<{ path: string }> } }) =>
    (await readSplit(svc.platform, res.json().full_splits[0]!.path)).map((r) => (r as { messages: Array<{ content: string }> }).messages.map((m) => m.content));

  it('processes a semicolon file, and a UTF-16 one, into separate user and assistant turns', async () => {
    const text = 'question;answer\r\nWhat is 2+2?;4\r\nCapital of France?;Paris, of course\r\n';
    for (const content of [text, Buffer.from(`\ufeff${text.replace('Paris', 'Paris, café')}`, 'utf16le')]) {
      const upload = await uploadOf('semicolons.csv', content);
      expect(upload).toMatchObject({ delimiter: ';', columns: ['question', 'answer'] });
      const res = await svc.process(qaRequest(upload.dataset_id, { type: 'column', value: 'question' }, { type: 'column', value: 'answer' }));
      expect(res.statusCode, res.body).toBe(200);
      const [first, second] = await turns(res);
      expect(first).toEqual(['What is 2+2?', '4']);
      expect(second![1]).toMatch(/^Paris, (café, )?of course$/);
    }
  });

  it('reads the file with the delimiter the upload chose, not one detected again', async () => {
    // Detection would split this at the commas; the upload asked for semicolons, and processing must agree.
    const upload = await uploadOf('people.csv', 'name;tags,notes\nann;a,b\nbob;c,d\n', { delimiter: ';' });
    expect(upload.columns).toEqual(['name', 'tags,notes']);
    const res = await svc.process(qaRequest(upload.dataset_id, { type: 'column', value: 'name' }, { type: 'column', value: 'tags,notes' }));
    expect(res.statusCode, res.body).toBe(200);
    expect(await turns(res)).toEqual([['ann', 'a,b'], ['bob', 'c,d']]);
  });

  it('refuses one column mapped to both turns with a 422 naming both fields, before reading a row', async () => {
    // The misread file of #38: "question;answer" read as one column, mapped to both turns.
    const upload = await uploadOf('qa.csv', 'question;answer\nWhy?;Because.\nHow?;Thus.\n', { delimiter: ',' });
    const before = (await svc.platform.blobs.list('processed/')).length;
    const both = { type: 'column', value: 'question;answer' };
    const res = await svc.process(qaRequest(upload.dataset_id, both, both));
    expect(res.statusCode, res.body).toBe(422);
    const detail = res.json().detail as Array<{ loc: string[]; msg: string; type: string }>;
    expect(detail.map((d) => d.loc)).toEqual([[...fm, 'user_field'], [...fm, 'assistant_field']]);
    expect(detail[0]!.msg).toBe(
      'user_field and assistant_field render the same text in every row, so the model would only learn to repeat the prompt; ' +
        'map user_field to the prompts and assistant_field to the answers (the dataset\'s columns are: question;answer); ' +
        'the file was read as one column: if it is separated by ";", "|" or tabs, upload it again with the delimiter field set',
    );
    expect(detail[1]!.msg).toBe('assistant_field renders the same text as user_field in every row; map it to the column (or template) that holds the answers');
    expect((await svc.platform.blobs.list('processed/')).length).toBe(before);
  });

  it('refuses different mappings that render the same text in every row, and keeps nothing; one differing row is enough to pass', async () => {
    const before = (await svc.platform.blobs.list('processed/')).length;
    const datasetsBefore = (await svc.call({ url: '/datasets' })).json().datasets.length;
    // A template around the column, and whitespace that normalisation removes: the same text in all 40 rows.
    const res = await svc.process(lm({}, { field_mappings: { user_field: { type: 'template', value: ' {question} ' }, assistant_field: { type: 'column', value: 'question' } } }));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail.map((d: { loc: string[] }) => d.loc)).toEqual([[...fm, 'user_field'], [...fm, 'assistant_field']]);
    expect(res.json().detail[0].msg).toMatch(/^user_field and assistant_field render the same text in every row.*question, answer, context\)$/);
    expect((await svc.platform.blobs.list('processed/')).length).toBe(before);
    expect((await svc.call({ url: '/datasets' })).json().datasets.length).toBe(datasetsBefore);

    const upload = await uploadOf('echo.csv', 'q,a\nsame,same\nsame,different\n');
    const ok = await svc.process(qaRequest(upload.dataset_id, { type: 'column', value: 'q' }, { type: 'column', value: 'a' }));
    expect(ok.statusCode, ok.body).toBe(200);
  });
});
