// The console's own app, driven with inject: a missing web build is said plainly (page, health, log), a service it
// cannot reach is a 503 with a sentence, not a stack trace, and a download link is minted only for a service's path.
// (The pages themselves, and a download through a link: test/console.test.ts.)
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildConsoleApp, CONSOLE_UPSTREAMS, type ConsoleUpstream } from '../src/index.ts';
import { freePort } from '../../../test/servers/servers.ts';

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
    expect((await mint({ service: 'nowhere', path: '/x' })).json().detail).toMatch(/^service must be one of preprocessing, training, export/);
    const elsewhere = await mint({ service: 'export', path: '//elsewhere.example/file' });
    expect(elsewhere.statusCode).toBe(422);
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
