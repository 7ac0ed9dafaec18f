// The console's own app, driven with inject: a missing web build is said plainly (page, health, log), a service it
// cannot reach is a 503 with a sentence, not a stack trace, and a download link is minted only for a service's download
// endpoint, only when the service accepts the caller, within a pool per credential, and expires without harm.
// (The pages themselves, and a download through a link: test/console.test.ts.)
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildConsoleApp, CONSOLE_UPSTREAMS, type ConsoleUpstream } from '../src/index.ts';
import { MAX_WAITING, TOKEN_TTL_MS } from '../src/downloads.ts';
import { freePort } from '../../../test/servers/servers.ts';
import { uncaughtDuring } from '../../../test/support/uncaught.ts';

let app: FastifyInstance;
let emptyDist: string;
let upstream: string;

beforeAll(async () => {
  emptyDist = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-console-dist-'));
  // A port nothing listens on: every service is down.
  upstream = `http://127.0.0.1:${await freePort()}`;
  app = await buildConsoleApp({ upstreams: Object.fromEntries(CONSOLE_UPSTREAMS.map((name) => [name, upstream])) as Record<ConsoleUpstream, string>, distDir: emptyDist, logLevel: 'silent' });
});

afterAll(async () => {
  await app?.close();
  await fs.rm(emptyDist, { recursive: true, force: true });
});

describe('the console app', () => {
  it('without a web build, says how to make one: on every page and in its health', async () => {
    const page = await app.inject({ url: '/training/job_1' });
    expect(page.statusCode).toBe(503);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toContain('bash scripts/bootstrap.sh');
    const health = await app.inject({ url: '/health' });
    expect(health.statusCode).toBe(503);
    expect(health.json()).toMatchObject({ status: 'degraded', service: 'console', checks: { assets: expect.stringContaining('missing') } });
  });

  it('answers a service it cannot reach with 503 and a sentence naming it', async () => {
    const response = await app.inject({ url: '/api/training/jobs' });
    expect(response.statusCode).toBe(503);
    expect(response.json().detail).toBe(`the training service at ${upstream} cannot be reached (ECONNREFUSED); is it running?`);
  });

  it('mints download links only for a path of a known service, and says why not otherwise', async () => {
    const mint = (body: unknown) => app.inject({ method: 'POST', url: '/downloads', payload: body as object });
    expect((await mint({ service: 'nowhere', path: '/x' })).json().detail).toEqual([
      { loc: ['body', 'service'], msg: expect.stringMatching(/^service must be one of preprocessing, training, export/), type: 'enum' },
    ]);
    const elsewhere = await mint({ service: 'export', path: '//elsewhere.example/file' });
    expect(elsewhere.statusCode).toBe(422);
    // Only download endpoints: what anyone may read (/health, /docs) would let a link be minted without a key.
    for (const [service, path] of [['preprocessing', '/health'], ['export', '/health'], ['export', '/docs/json'], ['training', '/jobs/job_1/dashboard']]) {
      const refused = await mint({ service, path });
      expect(refused.statusCode, `${service} ${path}`).toBe(422);
      expect(refused.json().detail).toEqual([{ loc: ['body', 'path'], msg: expect.stringMatching(/^path must be a download endpoint of the service/), type: 'value_error' }]);
    }
    const down = await mint({ service: 'export', path: '/exports/job_1/download?type=gguf' });
    expect(down.statusCode).toBe(503);
    expect(down.json().detail).toBe(`the export service at ${upstream} cannot be reached; is it running?`);
    const unknown = await app.inject({ url: '/downloads/not-a-token' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().detail).toMatch(/used already or has expired/);
  });

  it('answers an unknown /api path and a missing asset with 404, not the app', async () => {
    expect((await app.inject({ url: '/api/nothing/here' })).statusCode).toBe(404);
    expect((await app.inject({ url: '/assets/missing.js' })).statusCode).toBe(404);
  });
});

/** A service that streams a small file to a caller with the key `Bearer good-<anything>`, and refuses anyone else as the
 *  services do in token mode (401). */
async function fileService() {
  const server = http.createServer((req, res) => {
    if (!/^Bearer good-/.test(req.headers.authorization ?? '')) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'this endpoint needs an `Authorization: Bearer <token>` header' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-disposition': 'attachment; filename="model.gguf"' }).end('GGUF');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('download links', () => {
  const path = '/exports/job_1/download?type=gguf';

  it('are minted only when the service accepts the caller, and counted per credential', async () => {
    const service = await fileService();
    const console = await buildConsoleApp({ upstreams: Object.fromEntries(CONSOLE_UPSTREAMS.map((n) => [n, service.url])) as Record<ConsoleUpstream, string>, distDir: emptyDist, logLevel: 'silent' });
    try {
      const mint = (authorization?: string) =>
        console.inject({ method: 'POST', url: '/downloads', payload: { service: 'export', path }, headers: authorization ? { authorization } : {} });
      // No key, or a wrong one: the service's refusal, relayed; no link, and nothing taken from anyone's pool.
      for (const authorization of [undefined, 'Bearer forged']) {
        const refused = await mint(authorization);
        expect(refused.statusCode).toBe(401);
        expect(refused.json().url).toBeUndefined();
      }
      const uncaught = await uncaughtDuring(async () => {
        const alice = 'Bearer good-alice';
        for (let i = 0; i < MAX_WAITING; i++) expect((await mint(alice)).statusCode).toBe(201);
        const full = await mint(alice);
        expect(full.statusCode).toBe(429);
        expect(full.json().detail).toBe(`${MAX_WAITING} of your downloads are waiting to start; follow or drop them first`);
        // Alice's links do not fill Bob's pool.
        const bob = await mint('Bearer good-bob');
        expect(bob.statusCode).toBe(201);
        const followed = await console.inject({ url: bob.json().url });
        expect(followed.statusCode).toBe(200);
        expect(followed.headers['content-disposition']).toBe('attachment; filename="model.gguf"');
      });
      expect(uncaught).toEqual([]);
    } finally {
      await console.close();
      await service.close();
    }
  });

  it('that expire unfollowed are dropped without taking anything down', async () => {
    const service = await fileService();
    const console = await buildConsoleApp({ upstreams: Object.fromEntries(CONSOLE_UPSTREAMS.map((n) => [n, service.url])) as Record<ConsoleUpstream, string>, distDir: emptyDist, logLevel: 'silent' });
    try {
      let url = '';
      // Anything uncaught would be the old crash: an unfollowed link's body, destroyed at expiry with no listener,
      // emitted RequestAbortedError and ended the process.
      const uncaught = await uncaughtDuring(async () => {
        vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
        const minted = await console.inject({ method: 'POST', url: '/downloads', payload: { service: 'export', path }, headers: { authorization: 'Bearer good-alice' } });
        expect(minted.statusCode).toBe(201);
        expect(minted.json().expires_in_s).toBe(TOKEN_TTL_MS / 1000);
        url = minted.json().url;
        vi.advanceTimersByTime(TOKEN_TTL_MS);
        vi.useRealTimers();
      });
      expect(uncaught).toEqual([]);
      expect((await console.inject({ url })).statusCode).toBe(404);
    } finally {
      vi.useRealTimers();
      await console.close();
      await service.close();
    }
  });
});
