// POST /datasets/process with dataset_source hub, through the real app against the local hub stand-in.
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubStandin, type HubStandin } from '../../../test/hub-standin/server.ts';
import { buildHubDatasetFixtures, SUPPORT_CHATS, type HubDatasetFixtures } from '../../../test/hub-standin/fixtures.ts';
import { readSplit, startService, type TestService } from '../../../test/support/preprocessing.ts';

let hub: HubStandin;
let svc: TestService;
let fixtures: HubDatasetFixtures;
beforeAll(async () => {
  fixtures = buildHubDatasetFixtures(parquetWriteBuffer);
  hub = await startHubStandin({ datasets: fixtures.datasets, cardData: fixtures.cardData });
  svc = await startService({ HF_ENDPOINT: hub.url });
});
afterAll(async () => {
  await svc.close();
  await hub.close();
});

const hubRequest = (subset: string, split_config: Record<string, unknown>) => ({
  dataset_name: `chats-${subset}`,
  dataset_id: SUPPORT_CHATS,
  dataset_source: 'hub',
  dataset_subset: subset,
  config: {
    field_mappings: {
      user_field: { type: 'template', value: '{question}\n{context}' },
      assistant_field: { type: 'column', value: 'answer' },
    },
    split_config,
  },
});

describe('hub datasets', () => {
  it('hub_split maps the named splits of a subset to train and test, rows in order', async () => {
    const res = await svc.process(hubRequest('fr', { type: 'hub_split', train_split: 'train', test_split: 'test' }));
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ dataset_source: 'hub', dataset_subset: 'fr', dataset_id: SUPPORT_CHATS, num_examples: 25, splits: ['train', 'test'] });
    const train = await readSplit(svc.platform, body.full_splits[0].path);
    const expected = fixtures.rows.fr.train.map((r) => ({
      messages: [
        { role: 'user', content: `${r.question}\n${r.context}` },
        { role: 'assistant', content: r.answer },
      ],
    }));
    expect(train).toEqual(expected);
    expect(await readSplit(svc.platform, body.full_splits[1].path)).toHaveLength(5);
    // Parquet is read by range requests, never as a whole download.
    const parquetReads = hub.requests.filter((r) => r.url.includes('.parquet') || r.url.includes('/cdn-lfs/'));
    expect(parquetReads.some((r) => r.range)).toBe(true);
  });

  it('manual_split over one hub split of the default subset', async () => {
    const res = await svc.process(hubRequest('default', { type: 'manual_split', split: 'train', test_size: 0.1 }));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().full_splits.map((s: { num_rows: number }) => s.num_rows)).toEqual([18, 2]);
  });

  it('an unknown subset or split is a 422 listing what exists', async () => {
    const subset = await svc.process(hubRequest('de', { type: 'no_split' }));
    expect(subset.statusCode).toBe(422);
    expect(subset.json().detail[0].loc).toEqual(['body', 'dataset_subset']);
    expect(subset.json().detail[0].msg).toMatch(/default/);
    const split = await svc.process(hubRequest('default', { type: 'hub_split', train_split: 'train', test_split: 'validation' }));
    expect(split.statusCode).toBe(422);
    expect(split.json().detail[0]).toMatchObject({ loc: ['body', 'config', 'split_config', 'test_split'] });
    expect(split.json().detail[0].msg).toMatch(/the dataset has: train, test/);
  });

  it('an unknown repo is a 404', async () => {
    const res = await svc.process({ ...hubRequest('default', { type: 'no_split' }), dataset_id: 'acme/nothing-here' });
    expect(res.statusCode).toBe(404);
  });
});

describe('hub unreachable', () => {
  it('answers 503 naming the hub', async () => {
    const down = await startService({ HF_ENDPOINT: 'http://127.0.0.1:9', HUB_TIMEOUT_MS: '2000' });
    try {
      const res = await down.process(hubRequest('default', { type: 'no_split' }));
      expect(res.statusCode).toBe(503);
      expect(res.json().detail).toMatch(/hub.*unreachable.*HF_ENDPOINT/);
    } finally {
      await down.close();
    }
  });
});
