// The HTTP base every service shares: auth modes, error bodies, request ids, and secrets kept out of logs.
import { once } from 'node:events';
import net from 'node:net';
import { SignJWT, exportSPKI, generateKeyPair } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BadRequest, Conflict, createServiceApp, NotFound, ServiceUnavailable } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { MAX_JSON_DEPTH, MAX_PARAM_LENGTH } from '@ftp/schema';
import type { FastifyInstance } from 'fastify';

let platform: TestPlatform | undefined;
afterEach(async () => {
  await platform?.close();
  platform = undefined;
});

async function appWith(env: Record<string, string> = {}): Promise<FastifyInstance> {
  platform = await openTestPlatform(env);
  const app = createServiceApp({ platform });
  app.get('/open', async (req) => ({ user: req.userId }));
  app.get('/public', { schema: { security: [] } }, async (req) => ({ user: req.userId }));
  app.get('/guarded', { schema: { security: [{ bearerAuth: [] }] } }, async (req) => ({ user: req.userId }));
  app.post(
    '/things/:thing_id',
    {
      schema: {
        params: z.object({ thing_id: z.string().regex(/^t_/) }),
        body: z.object({ name: z.string(), hub_token: z.string().optional(), nested: z.object({ n: z.number().int() }).optional() }),
      },
    },
    async (req) => ({ ok: true, params: req.params }),
  );
  app.delete('/things/special', async () => ({ ok: true }));
  app.post('/things/:thing_id/cancel', { schema: { params: z.object({ thing_id: z.string() }) } }, async (req) => ({ cancelled: true, body: req.body ?? null }));
  app.post('/things/:thing_id/rotate', { schema: { body: z.object({ keep: z.boolean().optional() }).optional() } }, async (req) => ({ body: req.body ?? null }));
  app.post('/things/:thing_id/update', { schema: { body: z.object({ name: z.string().optional() }) } }, async (req) => ({ body: req.body }));
  app.get('/fail/:kind', async (req) => {
    const kind = (req.params as { kind: string }).kind;
    if (kind === 'bad') throw new BadRequest('row 3 has 2 fields, expected 3');
    if (kind === 'missing') throw new NotFound('dataset', 'ds_x');
    if (kind === 'conflict') throw new Conflict('the job is running; cancel it first');
    if (kind === 'down') throw new ServiceUnavailable('hub', 'the model hub is unreachable');
    throw new Error('secret internals at /srv/x.ts:10');
  });
  await app.ready();
  return app;
}

describe('authentication', () => {
  it('AUTH_MODE=none: everyone is the local user, even with a header', async () => {
    const app = await appWith();
    expect((await app.inject({ url: '/guarded' })).json()).toEqual({ user: 'local' });
    expect((await app.inject({ url: '/open', headers: { authorization: 'Bearer whatever' } })).json()).toEqual({ user: 'local' });
  });

  it('AUTH_MODE=token: hashed keys map to users; every endpoint but the public ones needs one; revoked keys fail', async () => {
    const app = await appWith({ AUTH_MODE: 'token' });
    const { key, row } = await platform!.apiKeys.create('alice', 'laptop');
    expect(JSON.stringify(await platform!.db.query('SELECT * FROM api_keys'))).not.toContain(key);
    // No anonymous user: where the interface shows no header too.
    for (const url of ['/guarded', '/open']) {
      const refused = await app.inject({ url });
      expect(refused.statusCode, url).toBe(401);
      expect(refused.json().detail).toMatch(/Authorization: Bearer <token>.*pnpm keys create/);
    }
    expect((await app.inject({ url: '/public' })).json()).toEqual({ user: 'local' });
    const auth = { authorization: `Bearer ${key}` };
    expect((await app.inject({ url: '/guarded', headers: auth })).json()).toEqual({ user: 'alice' });
    expect((await app.inject({ url: '/open', headers: auth })).json()).toEqual({ user: 'alice' });
    expect((await app.inject({ url: '/open', headers: { authorization: 'Bearer ftp_nope' } })).statusCode).toBe(401);
    expect((await app.inject({ url: '/open', headers: { authorization: 'Basic abc' } })).statusCode).toBe(401);
    await platform!.apiKeys.revoke(row.key_id);
    expect((await app.inject({ url: '/guarded', headers: auth })).statusCode).toBe(401);
  });

  it('AUTH_MODE=jwt with HS256: sub is the user; bad signature, expiry and missing sub are 401', async () => {
    const secret = 'a'.repeat(40);
    const app = await appWith({ AUTH_MODE: 'jwt', JWT_SECRET: secret });
    const key = new TextEncoder().encode(secret);
    expect((await app.inject({ url: '/open' })).statusCode).toBe(401);
    expect((await app.inject({ url: '/open' })).json().detail).toMatch(/a JWT whose `sub` is your user id/);
    expect((await app.inject({ url: '/public' })).statusCode).toBe(200);
    const good = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('bob').setExpirationTime('5m').sign(key);
    expect((await app.inject({ url: '/guarded', headers: { authorization: `Bearer ${good}` } })).json()).toEqual({ user: 'bob' });
    const forged = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('bob').sign(new TextEncoder().encode('b'.repeat(40)));
    expect((await app.inject({ url: '/guarded', headers: { authorization: `Bearer ${forged}` } })).statusCode).toBe(401);
    const expired = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('bob').setExpirationTime(Math.floor(Date.now() / 1000) - 60).sign(key);
    expect((await app.inject({ url: '/guarded', headers: { authorization: `Bearer ${expired}` } })).statusCode).toBe(401);
    const noSub = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).sign(key);
    const res = await app.inject({ url: '/guarded', headers: { authorization: `Bearer ${noSub}` } });
    expect(res.statusCode).toBe(401);
    expect(res.json().detail).toMatch(/sub/);
  });

  it('AUTH_MODE=jwt with RS256 public key', async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const app = await appWith({ AUTH_MODE: 'jwt', JWT_PUBLIC_KEY: await exportSPKI(publicKey) });
    const token = await new SignJWT({}).setProtectedHeader({ alg: 'RS256' }).setSubject('carol').sign(privateKey);
    expect((await app.inject({ url: '/guarded', headers: { authorization: `Bearer ${token}` } })).json()).toEqual({ user: 'carol' });
  });
});

describe('error bodies', () => {
  it('422 with exact loc for body and path failures', async () => {
    const app = await appWith();
    const res = await app.inject({ method: 'POST', url: '/things/t_1', payload: { nested: { n: 1.5 } } });
    expect(res.statusCode).toBe(422);
    const locs = res.json().detail.map((d: { loc: string[] }) => d.loc);
    expect(locs).toContainEqual(['body', 'name']);
    expect(locs).toContainEqual(['body', 'nested', 'n']);
    const path = await app.inject({ method: 'POST', url: '/things/x1', payload: { name: 'a' } });
    expect(path.statusCode).toBe(422);
    expect(path.json().detail[0].loc).toEqual(['path', 'thing_id']);
  });

  it('a number beyond a double says so, not "expected number, received number"', async () => {
    const app = await appWith();
    const res = await app.inject({ method: 'POST', url: '/things/t_1', headers: { 'content-type': 'application/json' }, payload: '{"name": "a", "nested": {"n": 1e400}}' });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail).toEqual([{ loc: ['body', 'nested', 'n'], msg: 'Expected a finite number; this one is beyond the range of a double (about ±1.8e308).', type: 'invalid_type' }]);
  });

  it('a body nested deeper than MAX_JSON_DEPTH is a 422 at the level that passes it, however deep it goes', async () => {
    const app = await appWith();
    // 3,000 levels once overflowed the stack in the NUL check: a 500.
    for (const levels of [MAX_JSON_DEPTH + 1, 3000, 100_000]) {
      const payload = `{"name": "a", "extra": ${'['.repeat(levels)}${']'.repeat(levels)}}`;
      const res = await app.inject({ method: 'POST', url: '/things/t_1', headers: { 'content-type': 'application/json' }, payload });
      expect(res.statusCode, `${levels} levels`).toBe(422);
      const [entry] = res.json().detail;
      expect(entry).toEqual({ loc: ['body', 'extra', ...Array(MAX_JSON_DEPTH).fill('0')], msg: `nests deeper than ${MAX_JSON_DEPTH} levels; flatten it`, type: 'too_deep' });
    }
    const within = `{"name": "a\\u0000", "extra": ${'['.repeat(MAX_JSON_DEPTH - 1)}${']'.repeat(MAX_JSON_DEPTH - 1)}}`;
    const nul = await app.inject({ method: 'POST', url: '/things/t_1', headers: { 'content-type': 'application/json' }, payload: within });
    expect(nul.json().detail).toEqual([{ loc: ['body', 'name'], msg: 'must not contain the NUL character (U+0000); remove it', type: 'string_pattern_mismatch' }]);
  });

  it('a body shorter than its Content-Length, whose sender stops, is a 400 in our body', async () => {
    const app = await appWith();
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.end('POST /things/t_1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name": "a"');
    await once(socket, 'close');
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1.1 400 Bad Request/);
    expect(JSON.parse(body!)).toEqual({ detail: 'the request ended before its body was complete (fewer bytes than its Content-Length); send the whole body' });
  });

  it('an empty body with a JSON content type, byte for byte as the openai Python SDK sends it: no body where none is needed, a 422 naming each missing field where one is', async () => {
    const app = await appWith();
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    // The request line and headers openai 3.57's jobs.cancel, pause and resume, batches.cancel and uploads.cancel send
    // (captured from the SDK; its other headers change nothing here): no body after `Content-Length: 0`.
    const send = async (path: string) => {
      const socket = net.connect(port, '127.0.0.1');
      await once(socket, 'connect');
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString()));
      socket.end(`POST ${path} HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nContent-Length: 0\r\ncontent-type: application/json\r\nConnection: close\r\n\r\n`);
      await once(socket, 'close');
      const [head, body] = answer.split('\r\n\r\n');
      return { status: Number(head!.split(' ')[1]), body: JSON.parse(body!) };
    };
    expect(await send('/things/t_1/cancel')).toEqual({ status: 200, body: { cancelled: true, body: null } });
    const needed = await send('/things/t_1');
    expect(needed.status).toBe(422);
    expect(needed.body.detail.map((d: { loc: string[] }) => d.loc)).toEqual([['body', 'name']]);
    // a body that may be left out gets none; one whose fields are all optional is still a body to send (OpenAPI: required)
    expect(await send('/things/t_1/rotate')).toEqual({ status: 200, body: { body: null } });
    const update = await send('/things/t_1/update');
    expect([update.status, update.body.detail]).toEqual([422, [{ loc: ['body'], msg: 'the request has no body; send a JSON object ({} when no field is needed)', type: 'missing' }]]);
    // a body of JSON null is no absent body: the wrong type, even where no body is needed
    const nul = await app.inject({ method: 'POST', url: '/things/t_1/rotate', headers: { 'content-type': 'application/json' }, payload: 'null' });
    expect([nul.statusCode, nul.json().detail[0].loc]).toEqual([422, ['body']]);
    // The same without a content type (the npm SDK): no parser runs, the same answers.
    expect((await app.inject({ method: 'POST', url: '/things/t_1/cancel' })).json()).toEqual({ cancelled: true, body: null });
    expect((await app.inject({ method: 'POST', url: '/things/t_1' })).json().detail.map((d: { loc: string[] }) => d.loc)).toEqual([['body', 'name']]);
  });

  it('400 for malformed JSON, 404/409/503 from typed errors, 500 without internals', async () => {
    const app = await appWith();
    const bad = await app.inject({ method: 'POST', url: '/things/t_1', headers: { 'content-type': 'application/json' }, payload: '{"name": ' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().detail).toMatch(/not valid JSON/);
    expect((await app.inject({ url: '/fail/bad' })).json()).toEqual({ detail: 'row 3 has 2 fields, expected 3' });
    expect((await app.inject({ url: '/fail/missing' })).statusCode).toBe(404);
    expect((await app.inject({ url: '/fail/conflict' })).statusCode).toBe(409);
    const down = await app.inject({ url: '/fail/down' });
    expect(down.statusCode).toBe(503);
    expect(down.json().detail).toMatch(/hub/);
    const boom = await app.inject({ url: '/fail/boom' });
    expect(boom.statusCode).toBe(500);
    expect(boom.json()).toEqual({ detail: 'internal error', request_id: boom.headers['x-request-id'] });
    expect(boom.body).not.toContain('/srv/x.ts');
    const nowhere = await app.inject({ url: '/nowhere' });
    expect(nowhere.statusCode).toBe(404);
    expect(nowhere.json().detail).toMatch(/no endpoint GET \/nowhere/);
  });

  it('405 with an Allow header for a known path asked with a method it does not serve', async () => {
    const app = await appWith();
    const put = await app.inject({ method: 'PUT', url: '/things/t_1', payload: { name: 'a' } });
    expect(put.statusCode).toBe(405);
    expect(put.headers['allow']).toBe('POST');
    expect(put.json()).toEqual({ detail: 'PUT is not served at /things/t_1; use POST' });
    const del = await app.inject({ method: 'DELETE', url: '/fail/x' });
    expect(del.statusCode).toBe(405);
    expect(del.headers['allow']).toBe('GET, HEAD');
    expect((await app.inject({ method: 'PUT', url: '/things/t_1/more' })).statusCode).toBe(404);
    // The most specific path decides: /things/special serves DELETE only, not what /things/:thing_id serves.
    const special = await app.inject({ method: 'OPTIONS', url: '/things/special' });
    expect([special.statusCode, special.headers['allow']]).toEqual([405, 'DELETE']);
    // QUERY carries a body; refused before the not-found handler, it is still a 405, not a 400 about its body.
    const query = await app.inject({ method: 'QUERY', url: '/things/t_1' });
    expect([query.statusCode, query.headers['allow'], query.json()]).toEqual([405, 'POST', { detail: 'QUERY is not served at /things/t_1; use POST' }]);
  });

  it('the framework refusals in our body: 414, 413, 400 for a __proto__ body dropped only, and no NUL anywhere', async () => {
    const app = await appWith();
    const long = await app.inject({ method: 'POST', url: `/things/t_${'x'.repeat(MAX_PARAM_LENGTH)}`, payload: { name: 'a' } });
    expect(long.statusCode).toBe(414);
    expect(long.json()).toEqual({ detail: expect.stringContaining(`longer than ${MAX_PARAM_LENGTH} characters`) });
    expect(long.headers['x-request-id']).toMatch(/^req_/);
    // An id within MAX_PARAM_LENGTH as sent reaches its schema: 256 four-byte characters percent-encoded are 3072.
    const encoded = await app.inject({ method: 'POST', url: `/things/${encodeURIComponent('𝄞'.repeat(256))}`, payload: { name: 'a' } });
    expect(encoded.statusCode).toBe(422);
    const proto = await app.inject({ method: 'POST', url: '/things/t_1', headers: { 'content-type': 'application/json' }, payload: '{"name":"a","__proto__":{"x":1}}' });
    expect(proto.statusCode).toBe(200);
    const nul = await app.inject({ method: 'POST', url: '/things/t_1', payload: { name: 'a\u0000b' } });
    expect(nul.statusCode).toBe(422);
    expect(nul.json()).toEqual({ detail: [{ loc: ['body', 'name'], msg: 'must not contain the NUL character (U+0000); remove it', type: 'string_pattern_mismatch' }] });
    // A key the schema does not name is dropped with what it holds, so its NUL never reaches storage: accepted.
    const ignoredKey = await app.inject({ method: 'POST', url: '/things/t_1', payload: { name: 'a', 'k\u0000': 'v\u0000' } });
    expect(ignoredKey.statusCode).toBe(200);

    const small = createServiceApp({ platform: platform!, bodyLimit: 64 });
    small.post('/echo', async (req) => req.body);
    const tooLarge = await small.inject({ method: 'POST', url: '/echo', payload: { text: 'x'.repeat(100) } });
    expect([tooLarge.statusCode, tooLarge.json()]).toEqual([413, { detail: 'the request body is larger than this endpoint accepts' }]);
  });

  it('the same refusals in the OpenAI body on the /v1 style', async () => {
    platform = await openTestPlatform({});
    const app = createServiceApp({ platform, errorStyle: 'openai' });
    app.get('/v1/models/:model', async () => ({}));
    await app.ready();
    const long = await app.inject({ url: `/v1/models/${'m'.repeat(MAX_PARAM_LENGTH + 1)}` });
    expect(long.statusCode).toBe(414);
    expect(long.json()).toEqual({ error: { message: expect.stringContaining('path parameter'), type: 'invalid_request_error', param: null, code: null } });
    const put = await app.inject({ method: 'PUT', url: '/v1/models/m' });
    expect([put.statusCode, put.headers['allow'], put.json().error.code]).toEqual([405, 'GET, HEAD', 'method_not_allowed']);
  });
});

describe('logging', () => {
  it('never writes hub_token, api_key, llm_api_key or Authorization to a log line', async () => {
    const app = await appWith({ AUTH_MODE: 'token' });
    const { key } = await platform!.apiKeys.create('alice', 'k');
    const secrets = ['hf_SECRETHUBTOKEN123', 'tracker-SECRET-456', 'llm-SECRET-789'];
    await app.inject({ url: '/open', headers: { authorization: `Bearer ${key}` } });
    await app.inject({ url: '/open', headers: { authorization: 'Bearer ftp_wrong_SECRET_000' } });
    await app.inject({ method: 'POST', url: '/things/t_1', payload: { name: 'a', hub_token: secrets[0] } });
    await app.inject({ method: 'POST', url: '/things/t_1', payload: { hub_token: secrets[0], nested: { n: 'x' } } });
    await app.inject({ url: '/fail/boom' });
    app.log.info({ body: { hub_token: secrets[0], tracker_config: { api_key: secrets[1] }, augmentation_config: { llm_api_key: secrets[2] } }, headers: { Authorization: `Bearer ${key}` } }, 'request body seen');
    const logged = platform!.logText();
    expect(logged).toContain('request body seen');
    expect(logged).toContain('[redacted]');
    for (const secret of [...secrets, key, 'ftp_wrong_SECRET_000']) expect(logged).not.toContain(secret);
  });
});

describe('request logs', () => {
  it('record method, url, request id and status code', async () => {
    const app = await appWith();
    await app.inject({ url: '/open?x=1' });
    const lines = platform!.logText().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const incoming = lines.find((l) => l.msg === 'incoming request');
    const completed = lines.find((l) => l.msg === 'request completed');
    expect(incoming?.req).toMatchObject({ method: 'GET', url: '/open?x=1' });
    expect(completed?.res).toEqual({ statusCode: 200 });
  });
});
