// How long ftune's calls wait, against a real HTTP server that answers slowly: a lookup gives up with a sentence,
// work waits for its late answer, an event stream outlasts any silence. The limits are scaled down to milliseconds
// here (the command uses CALL_TIMEOUTS); the stream's none is the real one.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, CALL_TIMEOUTS, type CallKind, type CallTimeouts } from '../src/http.ts';
import { parseSse } from '../src/sse.ts';

// undici checks its limits on a coarse clock (half-second ticks, a second at the least): the silences are longer.
const QUIET_MS = 2_500;
const SHORT: CallTimeouts = { headersTimeout: 500, bodyTimeout: 500 };
const TIMEOUTS: Record<CallKind, CallTimeouts> = {
  lookup: SHORT,
  work: { headersTimeout: 0, bodyTimeout: 500 },
  stream: CALL_TIMEOUTS.stream,
  transfer: SHORT,
};

let server: http.Server;
let api: Api;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  server = http.createServer((request, response) => {
    void (async () => {
      if (request.url === '/late-answer') {
        // Nothing, not even headers, until the work is done.
        await sleep(QUIET_MS);
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"done":true}');
      } else if (request.url === '/quiet-stream') {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write('event: progress\ndata: 1\n\n');
        await sleep(QUIET_MS);
        response.end('event: end\ndata: 2\n\n');
      } else response.writeHead(404).end();
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const urls = { preprocessing: url, training: url, export: url, inference: url, openai: url };
  api = new Api({ urls, apiKey: undefined, hubToken: undefined, configFile: '/nonexistent' }, TIMEOUTS);
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('call time limits', () => {
  it('a lookup whose answer does not come in time fails with a sentence naming the limit', async () => {
    await expect(api.json('inference', 'GET', '/late-answer')).rejects.toThrow(/^the inference service at http:\/\/127\.0\.0\.1:\d+ sent no answer within 0\.5 s$/);
  });

  it('work waits for an answer that comes late', async () => {
    expect(await api.json('inference', 'GET', '/late-answer', { kind: 'work' })).toEqual({ done: true });
  });

  it('an event stream outlasts its silences; a lookup reading the same stream gives up mid-way', async () => {
    const res = await api.send('training', 'GET', '/quiet-stream', { kind: 'stream' });
    const events: string[] = [];
    for await (const message of parseSse(res.body!)) events.push(`${message.event}:${message.data}`);
    expect(events).toEqual(['progress:1', 'end:2']);
    await expect(api.json('training', 'GET', '/quiet-stream')).rejects.toThrow(/stopped sending in the middle of its answer \(nothing for 0\.5 s\)/);
  });

  it('the real limits: none for what the service paces (work headers, streams, transfers), undici’s 300 s for lookups', () => {
    expect(CALL_TIMEOUTS.stream).toEqual({ headersTimeout: 0, bodyTimeout: 0 });
    expect(CALL_TIMEOUTS.work.headersTimeout).toBe(0);
    expect(CALL_TIMEOUTS.transfer.headersTimeout).toBe(0);
    expect(CALL_TIMEOUTS.lookup).toEqual({ headersTimeout: 300_000, bodyTimeout: 300_000 });
  });
});
