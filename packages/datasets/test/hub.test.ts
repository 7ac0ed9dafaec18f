// The hub dataset source against the hub stand-in: the layouts real hub datasets use, rows read back through
// range requests, pagination and the token.
import { parquetWriteBuffer } from 'hyparquet-writer';
import { parquetMetadataAsync, parquetReadObjects, type AsyncBuffer } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotFound } from '@ftp/platform';
import {
  buildHubDatasetFixtures,
  SUPPORT_CHATS,
  SUPPORT_CHATS_CARD,
  SUPPORT_CHATS_CONVERTED,
  SUPPORT_CHATS_TEXT,
  type HubDatasetFixtures,
} from '../../../test/hub-standin/fixtures.ts';
import { startHubStandin, type HubStandin } from '../../../test/hub-standin/server.ts';
import { resolveHubDataset, type HubDataset } from '../src/hub/resolve-dataset.ts';
import { readRange } from '../src/readers/byte-source.ts';
import { readRows } from '../src/readers/index.ts';

const fixtures: HubDatasetFixtures = buildHubDatasetFixtures(parquetWriteBuffer);
let hub: HubStandin;

beforeAll(async () => {
  hub = await startHubStandin({ datasets: fixtures.datasets, cardData: fixtures.cardData });
});
afterAll(() => hub.close());

/** Every row of a split, across its files, through the readers module. */
async function splitRows(dataset: HubDataset, split: string): Promise<Record<string, unknown>[]> {
  const files = dataset.splits.find((s) => s.name === split)?.files ?? [];
  const rows: Record<string, unknown>[] = [];
  for (const file of files) for await (const row of readRows(file.source, file.format)) rows.push(row);
  return rows;
}

const shape = (dataset: HubDataset) => dataset.splits.map((s) => [s.name, s.files.map((f) => f.path)]);

describe('resolveHubDataset', () => {
  it('resolves both subsets with their train and test splits and reads every row back', async () => {
    const base = await resolveHubDataset({ endpoint: hub.url, repoId: SUPPORT_CHATS });
    expect(base.subset).toBe('default');
    expect(base.subsets).toEqual(['default', 'fr']);
    expect(base.revision).toBe(hub.store.repo('dataset', SUPPORT_CHATS)?.revisions.get('main')?.sha);
    expect(shape(base)).toEqual([
      ['train', ['data/train-00000-of-00001.parquet']],
      ['test', ['data/test-00000-of-00001.parquet']],
    ]);
    expect(await splitRows(base, 'train')).toEqual(fixtures.rows.default.train);
    expect(await splitRows(base, 'test')).toEqual(fixtures.rows.default.test);

    const fr = await resolveHubDataset({ endpoint: hub.url, repoId: SUPPORT_CHATS, subset: 'fr' });
    expect(shape(fr)).toEqual([
      ['train', ['fr/train-00000-of-00002.parquet', 'fr/train-00001-of-00002.parquet']],
      ['test', ['fr/test-00000-of-00001.parquet']],
    ]);
    expect(await splitRows(fr, 'train')).toEqual(fixtures.rows.fr.train);
    expect(await splitRows(fr, 'test')).toEqual(fixtures.rows.fr.test);
    expect(fr.splits[0]?.files[0]).toMatchObject({ format: 'parquet', size: expect.any(Number) });
  });

  it('reads a Parquet file by ranges: the footer, then one row group, never the whole file', async () => {
    const dataset = await resolveHubDataset({ endpoint: hub.url, repoId: SUPPORT_CHATS });
    const file = dataset.splits[0]?.files[0];
    if (!file) throw new Error('no train file');
    const source = file.source;
    const asyncBuffer: AsyncBuffer = {
      byteLength: source.size,
      slice: async (start, end = source.size) => (await readRange(source, start, end)).buffer,
    };
    hub.requests.length = 0;
    // A small first fetch so the footer read is a tail range, as it is for any file over 512 KiB.
    const metadata = await parquetMetadataAsync(asyncBuffer, { initialFetchSize: 64 });
    expect(metadata.row_groups).toHaveLength(2);
    const secondGroup = await parquetReadObjects({ file: asyncBuffer, metadata, rowStart: 10, rowEnd: 20 });
    expect(secondGroup).toEqual(fixtures.rows.default.train.slice(10));

    // The hub redirects the LFS file to its CDN; the Range header travels with the redirect.
    const downloads = hub.requests.filter((r) => r.method === 'GET' && r.url.startsWith('/cdn-lfs/'));
    expect(downloads.length).toBeGreaterThanOrEqual(2);
    for (const request of downloads) {
      expect(request.range).toMatch(/^bytes=\d+-\d+$/);
      expect(request.status).toBe(206);
    }
    expect(downloads[0]?.range).toBe(`bytes=${source.size - 64}-${source.size - 1}`);
    expect(downloads.reduce((sum, r) => sum + r.bytesSent, 0)).toBeLessThan(source.size);
    // None of the bytes of the first row group's column chunks were fetched.
    const first = metadata.row_groups[0]?.columns.map((c) => c.meta_data) ?? [];
    const groupStart = Math.min(...first.map((m) => Number(m?.dictionary_page_offset ?? m?.data_page_offset)));
    const groupEnd = Math.max(...first.map((m) => Number(m?.data_page_offset) + Number(m?.total_compressed_size)));
    for (const request of downloads) {
      const [from, to] = (request.range ?? '').slice('bytes='.length).split('-').map(Number) as [number, number];
      expect(to < groupStart || from >= groupEnd, `${request.range} overlaps row group 1`).toBe(true);
    }
  });

  it('follows the Link header through a paginated tree listing', async () => {
    const paged = await startHubStandin({ datasets: fixtures.datasets, pageSize: 2 });
    try {
      const dataset = await resolveHubDataset({ endpoint: paged.url, repoId: SUPPORT_CHATS, subset: 'fr' });
      expect(shape(dataset).map(([split]) => split)).toEqual(['train', 'test']);
      expect(dataset.splits[0]?.files).toHaveLength(2);
      const pages = paged.requests.filter((r) => r.url.includes('/tree/'));
      expect(pages.length).toBeGreaterThan(2);
      expect(pages.slice(1).every((r) => r.url.includes('cursor='))).toBe(true);
    } finally {
      await paged.close();
    }
  });

  it('sends the token with every request, so a private dataset resolves and reads', async () => {
    // Not an `hf_…` token: @huggingface/hub would refuse it as accessToken; mirrors use other forms.
    const token = 'mirror-token-123';
    const privateHub = await startHubStandin({ datasets: fixtures.datasets, token });
    try {
      const dataset = await resolveHubDataset({ endpoint: privateHub.url, repoId: SUPPORT_CHATS, token });
      expect(await splitRows(dataset, 'test')).toEqual(fixtures.rows.default.test);
      expect(privateHub.requests.length).toBeGreaterThan(2);
      expect(privateHub.requests.every((r) => r.authorization === `Bearer ${token}`)).toBe(true);

      const withoutToken = resolveHubDataset({ endpoint: privateHub.url, repoId: SUPPORT_CHATS });
      await expect(withoutToken).rejects.toBeInstanceOf(NotFound);
      await expect(withoutToken).rejects.toThrow(/hub token/);
    } finally {
      await privateHub.close();
    }
  });

  it('reads JSONL and CSV split files on main, ahead of the converted branch', async () => {
    const dataset = await resolveHubDataset({ endpoint: hub.url, repoId: SUPPORT_CHATS_TEXT });
    expect(dataset.splits.map((s) => [s.name, s.files.map((f) => [f.path, f.format])])).toEqual([
      ['train', [['train.jsonl', 'jsonl']]],
      ['test', [['test.csv', 'csv']]],
    ]);
    expect(await splitRows(dataset, 'train')).toEqual(fixtures.rows.default.train);
    expect(await splitRows(dataset, 'test')).toEqual(fixtures.rows.default.test);
  });

  it('falls back to refs/convert/parquet when main has no data files or lacks the subset', async () => {
    const converted = hub.store.repo('dataset', SUPPORT_CHATS_CONVERTED)?.revisions.get('refs/convert/parquet');
    const scripted = await resolveHubDataset({ endpoint: hub.url, repoId: SUPPORT_CHATS_CONVERTED, subset: 'fr' });
    expect(scripted.revision).toBe(converted?.sha);
    expect(scripted.subsets).toEqual(['default', 'fr']);
    expect(shape(scripted)).toEqual([
      ['train', ['fr/train/0000.parquet']],
      ['test', ['fr/test/0000.parquet']],
    ]);
    expect(await splitRows(scripted, 'train')).toEqual(fixtures.rows.fr.train);

    // Main of the text dataset holds only `default`; its `fr` exists only as converted Parquet.
    const fr = await resolveHubDataset({ endpoint: hub.url, repoId: SUPPORT_CHATS_TEXT, subset: 'fr' });
    expect(fr.splits[1]?.files[0]?.path).toBe('fr/test/0000.parquet');
    expect(await splitRows(fr, 'test')).toEqual(fixtures.rows.fr.test);
  });

  it("follows the README's configs: data_files globs per split, and the config marked default", async () => {
    const dataset = await resolveHubDataset({ endpoint: hub.url, repoId: SUPPORT_CHATS_CARD });
    expect(dataset.subset).toBe('en');
    expect(shape(dataset)).toEqual([
      ['train', ['english/chats-part1.parquet', 'english/chats-part2.parquet']],
      ['test', ['english/holdout.parquet']],
    ]);
    expect(await splitRows(dataset, 'train')).toEqual(fixtures.rows.default.train);
    expect(await splitRows(dataset, 'test')).toEqual(fixtures.rows.default.test);
  });
});
