// How the hub dataset source fails: unknown dataset (404), unknown subset or bad id (422), and a hub that
// is down, silent or failing (503 naming the hub), before and after resolution.
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotFound, ServiceUnavailable, UnprocessableEntity } from '@ftp/platform';
import { buildHubDatasetFixtures, SUPPORT_CHATS } from '../../../test/hub-standin/fixtures.ts';
import { startHubStandin, type HubStandin } from '../../../test/hub-standin/server.ts';
import { hubRangeSource } from '../src/hub/range-source.ts';
import { resolveHubDataset } from '../src/hub/resolve-dataset.ts';

const fixtures = buildHubDatasetFixtures(parquetWriteBuffer);
let hub: HubStandin;

beforeAll(async () => {
  hub = await startHubStandin({ datasets: fixtures.datasets });
});
afterAll(() => hub.close());

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable('expected a rejection'),
    (err: unknown) => err,
  );
}

describe('resolveHubDataset errors', () => {
  it('answers an unknown dataset with NotFound that says to check the id and the token', async () => {
    const err = await rejection(resolveHubDataset({ endpoint: hub.url, repoId: 'acme/no-such-dataset' }));
    expect(err).toBeInstanceOf(NotFound);
    expect((err as NotFound).statusCode).toBe(404);
    expect((err as Error).message).toMatch(/"acme\/no-such-dataset" not found; check the dataset id.*hub token/);
  });

  it('answers an unknown subset with a 422 on dataset_subset listing the subsets that exist', async () => {
    const err = await rejection(resolveHubDataset({ endpoint: hub.url, repoId: SUPPORT_CHATS, subset: 'de' }));
    expect(err).toBeInstanceOf(UnprocessableEntity);
    const issue = (err as UnprocessableEntity).issues[0];
    expect(issue?.loc).toEqual(['body', 'dataset_subset']);
    expect(issue?.msg).toContain('its subsets are: default, fr');
  });

  it('refuses an id that is not owner/name before calling the hub', async () => {
    hub.requests.length = 0;
    const err = await rejection(resolveHubDataset({ endpoint: hub.url, repoId: 'acme/../etc' }));
    expect((err as UnprocessableEntity).issues[0]?.loc).toEqual(['body', 'dataset_id']);
    expect(hub.requests).toHaveLength(0);
  });

  it('answers a hub that refuses connections with ServiceUnavailable naming the hub and HF_ENDPOINT', async () => {
    const closed = createTcpServer();
    const port = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
    const endpoint = `http://127.0.0.1:${port}`;
    const err = await rejection(resolveHubDataset({ endpoint, repoId: SUPPORT_CHATS }));
    expect(err).toBeInstanceOf(ServiceUnavailable);
    expect(err).toMatchObject({ statusCode: 503, dependency: 'hub' });
    expect((err as Error).message).toBe(
      `the model hub at ${endpoint} is unreachable: connect ECONNREFUSED 127.0.0.1:${port}; check HF_ENDPOINT or the network`,
    );
  });

  it('gives up on a hub that accepts but never answers after the timeout', async () => {
    const sockets: Socket[] = [];
    const silent = createTcpServer((socket) => sockets.push(socket));
    const endpoint = `http://127.0.0.1:${await listen(silent)}`;
    try {
      const started = Date.now();
      const err = await rejection(resolveHubDataset({ endpoint, repoId: SUPPORT_CHATS, timeoutMs: 300 }));
      expect(err).toBeInstanceOf(ServiceUnavailable);
      expect((err as Error).message).toContain('unreachable: no answer within 300 ms');
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('gives up on a download that goes quiet halfway', async () => {
    const stalling = createHttpServer((_req, res) => {
      res.writeHead(206, { 'Content-Range': 'bytes 0-99/100' });
      res.write(Buffer.alloc(10));
    });
    const endpoint = `http://127.0.0.1:${await listen(stalling)}`;
    try {
      const source = hubRangeSource({ endpoint, timeoutMs: 300, fetch }, { url: `${endpoint}/file`, path: 'file', size: 100 });
      const stream = await source.read({ start: 0, end: 100 });
      const err = await rejection((async () => { for await (const chunk of stream) void chunk; })());
      expect(err).toBeInstanceOf(ServiceUnavailable);
      expect((err as Error).message).toContain('no answer within 300 ms');
    } finally {
      stalling.closeAllConnections();
      await new Promise((resolve) => stalling.close(resolve));
    }
  });

  it('turns a hub 5xx into ServiceUnavailable', async () => {
    const failing: typeof fetch = async () => new Response('upstream down', { status: 502 });
    const err = await rejection(resolveHubDataset({ endpoint: hub.url, repoId: SUPPORT_CHATS, fetch: failing }));
    expect(err).toBeInstanceOf(ServiceUnavailable);
    expect((err as Error).message).toContain('answered 502');
  });

  it('refuses a server that ignores Range, except for a read of the whole file', async () => {
    const ignoringRanges: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.delete('range');
      return fetch(input, { ...init, headers });
    };
    const dataset = await resolveHubDataset({ endpoint: hub.url, repoId: SUPPORT_CHATS, fetch: ignoringRanges });
    const source = dataset.splits[0]?.files[0]?.source;
    if (!source) throw new Error('no train file');
    const err = await rejection(source.read({ start: 0, end: 4 }));
    expect(err).toBeInstanceOf(ServiceUnavailable);
    expect((err as Error).message).toContain('ignored a range request for data/train-00000-of-00001.parquet');
    let bytes = 0;
    for await (const chunk of await source.read({ start: 0, end: source.size })) bytes += (chunk as Buffer).length;
    expect(bytes).toBe(source.size);
  });

  it('reports a hub that goes away after resolution as ServiceUnavailable on the next read', async () => {
    const shortLived = await startHubStandin({ datasets: fixtures.datasets });
    const dataset = await resolveHubDataset({ endpoint: shortLived.url, repoId: SUPPORT_CHATS });
    await shortLived.close();
    const source = dataset.splits[0]?.files[0]?.source;
    const err = await rejection(source?.read({ start: 0, end: 4 }) ?? Promise.resolve());
    expect(err).toBeInstanceOf(ServiceUnavailable);
    expect((err as Error).message).toContain(`the model hub at ${shortLived.url} is unreachable`);
  });
});
