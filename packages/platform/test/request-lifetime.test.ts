// requestLifetime, the signal a route passes to the work it waits on: aborted (ClientClosedRequest) when the client goes
// away before its answer was sent in full, whether nothing or part of a stream had gone; never for a whole answer.
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, expect, it } from 'vitest';
import { ClientClosedRequest, requestLifetime } from '@ftp/platform';

let app: FastifyInstance | undefined;
afterEach(async () => {
  app?.server.closeAllConnections();
  await app?.close();
});

/** A server whose routes record each request's lifetime; `/wait` and `/stream` answer only once it aborts. */
async function serve(): Promise<{ url: string; lifetimes: AbortSignal[] }> {
  const lifetimes: AbortSignal[] = [];
  const until = (signal: AbortSignal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
  app = Fastify();
  app.get('/whole', async (_request, reply) => {
    lifetimes.push(requestLifetime(reply));
    return { ok: true };
  });
  app.get('/wait', async (_request, reply) => {
    const lifetime = requestLifetime(reply);
    lifetimes.push(lifetime);
    await until(lifetime);
    return { ok: false };
  });
  app.get('/stream', async (_request, reply) => {
    const lifetime = requestLifetime(reply);
    lifetimes.push(lifetime);
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
    reply.raw.write('data: first\n\n');
    await until(lifetime);
    reply.raw.end();
  });
  return { url: await app.listen({ host: '127.0.0.1', port: 0 }), lifetimes };
}

it('stays whole for an answer sent in full', async () => {
  const { url, lifetimes } = await serve();
  expect(await (await fetch(`${url}/whole`)).json()).toEqual({ ok: true });
  await new Promise((resolve) => setImmediate(resolve)); // the response's close has come
  expect(lifetimes[0]!.aborted).toBe(false);
});

it('aborts when the client closes while the answer is awaited', async () => {
  const { url, lifetimes } = await serve();
  const client = new AbortController();
  const answer = fetch(`${url}/wait`, { signal: client.signal }).catch((err: Error) => err.name);
  await expect.poll(() => lifetimes.length).toBe(1);
  client.abort();
  expect(await answer).toBe('AbortError');
  await expect.poll(() => lifetimes[0]!.aborted).toBe(true);
  expect(lifetimes[0]!.reason).toBeInstanceOf(ClientClosedRequest);
});

it('aborts when the client closes a stream it has begun to read', async () => {
  const { url, lifetimes } = await serve();
  const client = new AbortController();
  const response = await fetch(`${url}/stream`, { signal: client.signal });
  const first = await response.body!.getReader().read();
  expect(new TextDecoder().decode(first.value)).toContain('first');
  expect(lifetimes[0]!.aborted).toBe(false);
  client.abort();
  await expect.poll(() => lifetimes[0]!.aborted).toBe(true);
  expect(lifetimes[0]!.reason).toBeInstanceOf(ClientClosedRequest);
});
