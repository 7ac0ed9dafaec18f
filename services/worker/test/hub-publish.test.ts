// Publishing to a hub repository (createRepo + one commit through @huggingface/hub) against the hub
// stand-in's write endpoints: small files inline, LFS files through the batch API, bytes read back through
// the stand-in's download routes; and the failures a person has to act on (bad token, hub down).
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubStandin, type HubStandin } from '../../../test/hub-standin/server.ts';
import { publishToHub, type HubFile } from '../src/export/hub-publish.ts';

const TOKEN = 'standin-write-token-7731';
let hub: HubStandin;
let dir: string;
let files: HubFile[];
let contents: Record<string, Buffer>;

beforeAll(async () => {
  hub = await startHubStandin({ token: TOKEN });
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-hub-publish-'));
  contents = {
    'config.json': Buffer.from('{"a": 1}\n'),
    'model.safetensors': randomBytes(200_000),
    'nested/notes.txt': Buffer.from('hello\n'),
  };
  files = [];
  for (const [rel, content] of Object.entries(contents)) {
    const file = path.join(dir, ...rel.split('/'));
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, content);
    files.push({ path: rel, file });
  }
});
afterAll(async () => {
  await hub.close();
  await fs.rm(dir, { recursive: true, force: true });
});

const target = (over: Partial<Parameters<typeof publishToHub>[0]> = {}) => ({ endpoint: hub.url, token: TOKEN, repoId: 'acme/tiny', timeoutMs: 5000, ...over });

/** A file as a client downloads it from the hub: resolve, following the LFS redirect to the CDN. */
async function download(repoId: string, file: string): Promise<Buffer> {
  const res = await fetch(`${hub.url}/${repoId}/resolve/main/${file}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status, file).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe('publishToHub', () => {
  it('creates the repo and uploads every file in one commit; the bytes read back are the same', async () => {
    hub.requests.length = 0;
    const url = await publishToHub(target(), files, 'first upload');
    expect(url).toBe(`${hub.url}/acme/tiny`);
    expect(hub.store.commits).toEqual([expect.objectContaining({ id: 'acme/tiny', revision: 'main', summary: 'first upload', paths: Object.keys(contents) })]);
    for (const [rel, content] of Object.entries(contents)) expect(Buffer.compare(await download('acme/tiny', rel), content), rel).toBe(0);
    // The weights went through LFS (batch + upload), the small files inline in the commit.
    const calls = hub.requests.map((r) => `${r.method} ${r.url.split('?')[0]}`);
    expect(calls).toEqual(expect.arrayContaining([
      'POST /api/repos/create', 'POST /api/models/acme/tiny/preupload/main', 'POST /acme/tiny.git/info/lfs/objects/batch', 'POST /api/models/acme/tiny/commit/main',
    ]));
    expect(calls.filter((c) => c.startsWith('PUT /lfs-upload/'))).toHaveLength(1);
    expect(hub.store.revision(hub.store.repo('model', 'acme/tiny')!, 'main')!.files.get('model.safetensors')!.lfs).toBeDefined();
  });

  it('publishes again into an existing repository (a second commit, changed files replaced)', async () => {
    const changed = path.join(dir, 'config-v2.json');
    await fs.writeFile(changed, '{"a": 2}\n');
    await publishToHub(target(), [{ path: 'config.json', file: changed }], 'second upload');
    expect(hub.store.commits.map((c) => c.summary)).toEqual(['first upload', 'second upload']);
    expect((await download('acme/tiny', 'config.json')).toString()).toBe('{"a": 2}\n');
    expect(Buffer.compare(await download('acme/tiny', 'model.safetensors'), contents['model.safetensors']!)).toBe(0);
  });

  it('a wrong token fails with a sentence that says so, without the token', async () => {
    const wrong = 'wrong-token-5521';
    const err = await publishToHub(target({ token: wrong, repoId: 'acme/other' }), files, 'x').catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/refused the hub_token \(HTTP 401.*check that the token is valid/);
    expect((err as Error).message).not.toContain(wrong);
    expect(hub.store.repo('model', 'acme/other')).toBeUndefined();
  });

  it('an unreachable hub fails saying where and what to check', async () => {
    const server = net.createServer().listen(0, '127.0.0.1');
    await once(server, 'listening');
    const endpoint = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    server.close(); // nothing listens there now
    const err = await publishToHub(target({ endpoint }), files, 'x').catch((e: Error) => e);
    expect((err as Error).message).toBe(`the model hub at ${endpoint} is unreachable (connect ECONNREFUSED ${endpoint.slice(7)}); check HF_ENDPOINT or the network and export again`);
  });
});
