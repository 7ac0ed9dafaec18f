// The hub stand-in (test/hub-standin) checked with @huggingface/hub itself, so other tests can trust that
// the library reads its answers as it reads the real hub's.
import {
  datasetInfo,
  downloadFile,
  fileDownloadInfo,
  fileExists,
  listFiles,
  modelInfo,
  pathsInfo,
} from '@huggingface/hub';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildHubDatasetFixtures, SUPPORT_CHATS, SUPPORT_CHATS_TEXT } from '../../../test/hub-standin/fixtures.ts';
import { startHubStandin, type HubStandin } from '../../../test/hub-standin/server.ts';

const fixtures = buildHubDatasetFixtures(parquetWriteBuffer);
const dataset = { type: 'dataset', name: SUPPORT_CHATS } as const;
const TRAIN = 'data/train-00000-of-00001.parquet';
let hub: HubStandin;

beforeAll(async () => {
  hub = await startHubStandin({
    datasets: fixtures.datasets,
    models: { 'tiny-gpt': { main: { 'config.json': '{"n_layer":1}', 'model.safetensors': Buffer.alloc(64, 7) } } },
  });
});
afterAll(() => hub.close());

const content = (repo: string, revision: string, path: string) => {
  const file = fixtures.datasets[repo]?.[revision]?.[path];
  return Buffer.from(typeof file === 'string' ? file : (file ?? ''));
};

describe('hub stand-in, read with @huggingface/hub', () => {
  it('lists a tree: one folder or, recursively, everything', async () => {
    const root = [];
    for await (const entry of listFiles({ repo: dataset, hubUrl: hub.url })) root.push([entry.type, entry.path]);
    expect(root).toEqual([
      ['file', '.gitattributes'],
      ['file', 'README.md'],
      ['directory', 'data'],
      ['directory', 'fr'],
    ]);

    const data = [];
    for await (const entry of listFiles({ repo: dataset, path: 'data', hubUrl: hub.url })) data.push(entry);
    expect(data.map((e) => e.path)).toEqual(['data/test-00000-of-00001.parquet', TRAIN]);
    expect(data[1]).toMatchObject({ type: 'file', size: content(SUPPORT_CHATS, 'main', TRAIN).length, lfs: { size: expect.any(Number) } });

    // listFiles puts the revision in the URL unencoded; the hub (and the stand-in) take refs/… branches raw.
    const converted = [];
    for await (const entry of listFiles({ repo: { type: 'dataset', name: SUPPORT_CHATS_TEXT }, revision: 'refs/convert/parquet', recursive: true, hubUrl: hub.url })) {
      if (entry.type === 'file') converted.push(entry.path);
    }
    expect(converted).toContain('fr/train/0000.parquet');
  });

  it('gives revision info with the commit sha', async () => {
    const info = await datasetInfo({ name: SUPPORT_CHATS, hubUrl: hub.url, additionalFields: ['sha'] });
    expect(info.sha).toBe(hub.store.repo('dataset', SUPPORT_CHATS)?.revisions.get('main')?.sha);
    expect(info.name).toBe(SUPPORT_CHATS);
    await expect(datasetInfo({ name: 'acme/missing', hubUrl: hub.url })).rejects.toMatchObject({ statusCode: 401 });
  });

  it('serves downloads: size and ETag by a 1-byte range, LFS through the CDN redirect, slices by range', async () => {
    const lfs = await fileDownloadInfo({ repo: dataset, path: TRAIN, hubUrl: hub.url });
    const bytes = content(SUPPORT_CHATS, 'main', TRAIN);
    expect(lfs).toMatchObject({ size: bytes.length, etag: expect.stringMatching(/^"[0-9a-f]{64}"$/) });
    expect(lfs?.url).toContain('/cdn-lfs/');
    const readme = await fileDownloadInfo({ repo: dataset, path: 'README.md', hubUrl: hub.url });
    expect(readme?.etag).toMatch(/^"[0-9a-f]{40}"$/);
    expect(await fileDownloadInfo({ repo: dataset, path: 'nope.parquet', hubUrl: hub.url })).toBeNull();

    const blob = await downloadFile({ repo: dataset, path: TRAIN, hubUrl: hub.url });
    expect(Buffer.from((await blob?.arrayBuffer()) ?? new ArrayBuffer(0))).toEqual(bytes);
    expect(await blob?.slice(0, 4).text()).toBe('PAR1');
    expect(hub.requests.at(-1)).toMatchObject({ range: 'bytes=0-3', status: 206, bytesSent: 4 });

    const converted = await downloadFile({
      repo: { type: 'dataset', name: SUPPORT_CHATS_TEXT },
      path: 'fr/test/0000.parquet',
      revision: 'refs/convert/parquet',
      hubUrl: hub.url,
    });
    expect(converted?.size).toBe(content(SUPPORT_CHATS_TEXT, 'refs/convert/parquet', 'fr/test/0000.parquet').length);
  });

  it('answers HEAD, paths-info and out-of-range requests like the hub', async () => {
    expect(await fileExists({ repo: dataset, path: 'README.md', hubUrl: hub.url })).toBe(true);
    expect(await fileExists({ repo: dataset, path: 'missing.md', hubUrl: hub.url })).toBe(false);

    const [info] = await pathsInfo({ repo: dataset, paths: [TRAIN, 'missing'], expand: true, hubUrl: hub.url });
    expect(info).toMatchObject({ path: TRAIN, type: 'file', lastCommit: { id: expect.any(String) } });

    const url = `${hub.url}/datasets/${SUPPORT_CHATS}/resolve/main/README.md`;
    const head = await fetch(url, { method: 'HEAD' });
    expect(head.headers.get('content-length')).toBe(String(content(SUPPORT_CHATS, 'main', 'README.md').length));
    expect(head.headers.get('accept-ranges')).toBe('bytes');
    expect(head.headers.get('x-repo-commit')).toMatch(/^[0-9a-f]{40}$/);
    const beyond = await fetch(url, { headers: { Range: 'bytes=99999-' } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toMatch(/^bytes \*\/\d+$/);
  });

  it('serves model repos, including ids without an owner', async () => {
    const info = await modelInfo({ name: 'tiny-gpt', hubUrl: hub.url, additionalFields: ['sha'] });
    expect(info.sha).toMatch(/^[0-9a-f]{40}$/);
    const config = await downloadFile({ repo: 'tiny-gpt', path: 'config.json', hubUrl: hub.url });
    expect(await config?.text()).toBe('{"n_layer":1}');
    const weights = await downloadFile({ repo: 'tiny-gpt', path: 'model.safetensors', hubUrl: hub.url });
    expect(weights?.size).toBe(64);
  });
});
