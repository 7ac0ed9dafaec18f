// Webhooks as OpenAI sends them (#42), driven by the official npm SDK unchanged against a real app, platform, worker
// and deliverer: endpoints managed with client.webhooks.*, a fine-tuning job's end and a cancel sent as OpenAI's event
// objects, signed so that client.webhooks.unwrap verifies them; a failing endpoint retried with the same webhook-id
// until it answers; a rotated secret (the old one kept signing for 24 h when asked); deliveries listed and sent again;
// and targets refused where the operator did not allow private addresses.
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { DEFAULT_CORE_PYTHON } from '@ftp/core-client';
import { isPrivateAddress, safeLookup, sendEvent, startWebhookDeliverer, type WebhookDeliverer } from '@ftp/jobs/runtime';
import { startWorker, type WorkerHandle } from '@ftp/worker';
import { buildOpenAiApp } from '@ftp/openai';
import { tinyModelsDir, TINY_MODEL } from './support/tiny-model.ts';

interface Received {
  headers: Record<string, string>;
  body: string;
}

let platform: TestPlatform;
let worker: WorkerHandle;
let deliverer: WebhookDeliverer;
let app: FastifyInstance;
let client: OpenAI;
let receiver: http.Server;
let receiverUrl: string;
const received: Received[] = [];
/** The statuses the receiver answers next, in order (then 200). */
const answers: number[] = [];

beforeAll(async () => {
  platform = await openTestPlatform({ MODELS_DIR: await tinyModelsDir(), WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_BACKOFF_S: '0.2,0.2,0.2' });
  worker = await startWorker(platform, { queues: ['train'] });
  deliverer = startWebhookDeliverer(platform);
  app = await buildOpenAiApp(platform);
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  client = new OpenAI({ baseURL: `${address}/v1`, apiKey: 'unused', maxRetries: 0 });
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])), body });
      res.writeHead(answers.shift() ?? 200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
}, 300_000);
afterAll(async () => {
  await app?.close();
  await deliverer?.stop();
  await worker?.stop();
  await platform?.close();
  receiver?.close();
});

/** The events the receiver got of `type` (about `id` when given), each verified with `secret` by the SDK. */
async function eventsOf(type: string, secret: string, id?: string): Promise<Array<{ event: OpenAI.Webhooks.UnwrapWebhookEvent; headers: Record<string, string> }>> {
  const out = [];
  for (const r of received) {
    const parsed = JSON.parse(r.body) as { type: string; data: { id: string } };
    if (parsed.type !== type || (id !== undefined && parsed.data.id !== id)) continue;
    out.push({ event: await client.webhooks.unwrap(r.body, r.headers, secret), headers: r.headers });
  }
  return out;
}

/** GET /v1/webhook_endpoints/{id}/deliveries (ours: the SDKs have no call for it). */
async function listDeliveries(endpointId: string): Promise<Array<Record<string, unknown> & { id: string; status: string; attempts: number; event_id: string }>> {
  const res = await fetch(`${client.baseURL}/webhook_endpoints/${endpointId}/deliveries`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: Array<Record<string, unknown> & { id: string; status: string; attempts: number; event_id: string }> }).data;
}

const LINES = ['{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello."}]}', '{"messages":[{"role":"user","content":"Bye"},{"role":"assistant","content":"Goodbye."}]}'];

async function job(suffix: string) {
  const file = await client.files.create({ file: await toFile(Buffer.from(LINES.join('\n')), `${suffix}.jsonl`), purpose: 'fine-tune' });
  return client.fineTuning.jobs.create({ model: TINY_MODEL, training_file: file.id, suffix, method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 2, batch_size: 2 } } } });
}

describe('webhook endpoints (npm SDK)', { timeout: 300_000 }, () => {
  let endpoint: OpenAI.Webhooks.WebhookEndpointWithSecret;

  it('creates, reads, lists and changes an endpoint as OpenAI’s; the secret is shown once', async () => {
    endpoint = await client.webhooks.create({ name: 'jobs', url: receiverUrl, event_types: ['fine_tuning.job.succeeded', 'fine_tuning.job.cancelled'] });
    expect(endpoint).toMatchObject({ object: 'webhook_endpoint', name: 'jobs', url: receiverUrl, event_types: ['fine_tuning.job.succeeded', 'fine_tuning.job.cancelled'] });
    expect(endpoint.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(endpoint.signing_secret_hint).toBe(`whsec_…${endpoint.signing_secret.slice(-4)}`);
    const read = await client.webhooks.retrieve(endpoint.id);
    expect(read).not.toHaveProperty('signing_secret');
    expect(read.signing_secret_hint).toBe(endpoint.signing_secret_hint);
    expect((await client.webhooks.list()).data.map((e) => e.id)).toContain(endpoint.id);
    const renamed = await client.webhooks.update(endpoint.id, { name: 'fine-tuning' });
    expect(renamed).toMatchObject({ name: 'fine-tuning', url: receiverUrl });
    expect((await client.webhooks.eventTypes.list()).data).toEqual(expect.arrayContaining(['fine_tuning.job.succeeded', 'batch.completed', 'export.completed']));
    // Nothing stored holds the secret in clear.
    const [row] = await platform.db.query<{ secret: string }>('SELECT secret FROM webhook_endpoints WHERE endpoint_id = $1', [endpoint.id]);
    expect(row!.secret).not.toContain(endpoint.signing_secret.slice(6));
  });

  it('sends a sample event on test, signed so that unwrap verifies it', async () => {
    const result = await client.webhooks.test(endpoint.id, { event_type: 'fine_tuning.job.succeeded' });
    expect(result).toEqual({ object: 'webhook_endpoint.test', event_type: 'fine_tuning.job.succeeded', status_code: 200, success: true, webhook_endpoint_id: endpoint.id });
    const [sample] = await eventsOf('fine_tuning.job.succeeded', endpoint.signing_secret, 'fine_tuning_test');
    expect(sample!.event).toMatchObject({ object: 'event', type: 'fine_tuning.job.succeeded' });
    await expect(client.webhooks.unwrap(received.at(-1)!.body, received.at(-1)!.headers, `whsec_${Buffer.alloc(32).toString('base64')}`)).rejects.toThrow(/signature/);
  });

  it('sends a job’s success and a cancel as OpenAI’s events, once each', async () => {
    const done = await job('hooked');
    const cancelled = await job('cancelled');
    await client.fineTuning.jobs.cancel(cancelled.id);
    await expect.poll(async () => (await client.fineTuning.jobs.retrieve(done.id)).status, { timeout: 240_000, interval: 500 }).toBe('succeeded');
    await expect.poll(async () => (await eventsOf('fine_tuning.job.succeeded', endpoint.signing_secret, done.id)).length, { timeout: 30_000 }).toBe(1);
    await expect.poll(async () => (await eventsOf('fine_tuning.job.cancelled', endpoint.signing_secret, cancelled.id)).length, { timeout: 30_000 }).toBe(1);
    const [succeeded] = await eventsOf('fine_tuning.job.succeeded', endpoint.signing_secret, done.id);
    expect(succeeded!.event).toEqual({ id: succeeded!.headers['webhook-id'], object: 'event', type: 'fine_tuning.job.succeeded', created_at: expect.any(Number), data: { id: done.id } });
    // Not subscribed: no failed or started event reached it.
    expect(received.map((r) => JSON.parse(r.body).type)).not.toContain('fine_tuning.job.started');
    const deliveries = await listDeliveries(endpoint.id);
    expect(deliveries.filter((d) => d.status === 'delivered').length).toBeGreaterThanOrEqual(2);
    expect(deliveries.every((d) => d.attempts === 1)).toBe(true);
  });

  it('tries a failing endpoint again with the same webhook-id until it answers, and sends a delivery again on request', async () => {
    answers.push(500, 503);
    const before = received.length;
    const again = await job('retried');
    await client.fineTuning.jobs.cancel(again.id);
    await expect.poll(() => received.length - before, { timeout: 30_000 }).toBe(3);
    const attempts = received.slice(before);
    expect(new Set(attempts.map((a) => a.headers['webhook-id'])).size).toBe(1);
    for (const attempt of attempts) await client.webhooks.unwrap(attempt.body, attempt.headers, endpoint.signing_secret);
    const deliveries = await listDeliveries(endpoint.id);
    const retried = deliveries.find((d) => d.event_id === attempts[0]!.headers['webhook-id'])!;
    expect(retried).toMatchObject({ status: 'delivered', attempts: 3, last_status_code: 200, event_type: 'fine_tuning.job.cancelled' });
    const redelivered = await fetch(`${client.baseURL}/webhook_endpoints/${endpoint.id}/deliveries/${retried.id}/redeliver`, { method: 'POST' });
    expect(redelivered.status).toBe(200);
    await expect.poll(() => received.length - before, { timeout: 30_000 }).toBe(4);
    expect(received.at(-1)!.headers['webhook-id']).toBe(attempts[0]!.headers['webhook-id']);
  });

  it('rotates the secret: the old one stops at once, or signs beside the new one for 24 h when asked', async () => {
    const kept = await client.webhooks.rotateSecret(endpoint.id, { keep_old_secret_active_for_24_hours: true });
    expect(kept.signing_secret).not.toBe(endpoint.signing_secret);
    await client.webhooks.test(endpoint.id, { event_type: 'fine_tuning.job.failed' });
    const both = received.at(-1)!;
    expect(both.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    await client.webhooks.unwrap(both.body, both.headers, endpoint.signing_secret);
    await client.webhooks.unwrap(both.body, both.headers, kept.signing_secret);
    const fresh = await client.webhooks.rotateSecret(endpoint.id);
    await client.webhooks.test(endpoint.id, { event_type: 'fine_tuning.job.failed' });
    const only = received.at(-1)!;
    await client.webhooks.unwrap(only.body, only.headers, fresh.signing_secret);
    await expect(client.webhooks.unwrap(only.body, only.headers, kept.signing_secret)).rejects.toThrow(/signature/);
  });

  it('deletes an endpoint: a 404 from then on', async () => {
    expect(await client.webhooks.delete(endpoint.id)).toEqual({ id: endpoint.id, object: 'webhook_endpoint.deleted', deleted: true });
    await expect(client.webhooks.retrieve(endpoint.id)).rejects.toMatchObject({ status: 404 });
  });
});

/** Runs a Python script with the core's interpreter (it has the `openai` package a user would install). */
function python(script: string, args: string[], input = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.env.CORE_PYTHON ?? DEFAULT_CORE_PYTHON, ['-c', script, ...args]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(stdout.trim()) : reject(new Error(`python exited ${code}: ${stderr}`))));
    child.stdin.end(input);
  });
}

describe('webhook endpoints (Python SDK)', { timeout: 120_000 }, () => {
  it('manages an endpoint, and unwrap verifies what it was sent', async () => {
    const manage = `
import json, sys
from openai import OpenAI
client = OpenAI(base_url=sys.argv[1], api_key="unused", max_retries=0)
endpoint = client.webhooks.create(name="py", url=sys.argv[2], event_types=["fine_tuning.job.failed"])
assert endpoint.signing_secret.startswith("whsec_"), endpoint
assert client.webhooks.retrieve(endpoint.id).name == "py"
assert client.webhooks.update(endpoint.id, name="python").name == "python"
assert endpoint.id in [e.id for e in client.webhooks.list()]
rotated = client.webhooks.rotate_secret(endpoint.id)
assert rotated.signing_secret.startswith("whsec_") and rotated.signing_secret != endpoint.signing_secret, rotated
endpoint = rotated
result = client.webhooks.test(endpoint.id, event_type="fine_tuning.job.failed")
print(json.dumps({"id": endpoint.id, "secret": endpoint.signing_secret, "status": result.status_code}))
`;
    const made = JSON.parse(await python(manage, [client.baseURL, receiverUrl])) as { id: string; secret: string; status: number };
    expect(made.status).toBe(200);
    const sample = received.at(-1)!;
    const verify = `
import json, sys
from openai import OpenAI
given = json.load(sys.stdin)
event = OpenAI(api_key="unused").webhooks.unwrap(given["body"], given["headers"], secret=given["secret"])
print(event.type)
try:
    OpenAI(api_key="unused").webhooks.unwrap(given["body"], given["headers"], secret="whsec_" + "A" * 43 + "=")
    print("verified with another secret")
except Exception as err:
    print(type(err).__name__)
`;
    expect((await python(verify, [], JSON.stringify({ body: sample.body, headers: sample.headers, secret: made.secret }))).split('\n')).toEqual(['fine_tuning.job.failed', 'InvalidWebhookSignatureError']);
    await python('import sys\nfrom openai import OpenAI\nassert OpenAI(base_url=sys.argv[1], api_key="unused").webhooks.delete(sys.argv[2]).deleted', [client.baseURL, made.id]);
  });
});

describe('webhook targets', () => {
  it('refuses private, loopback and link-local addresses, and http, unless the operator allows them', async () => {
    const strict = await openTestPlatform({});
    const strictApp = await buildOpenAiApp(strict);
    try {
      const address = await strictApp.listen({ host: '127.0.0.1', port: 0 });
      const strictClient = new OpenAI({ baseURL: `${address}/v1`, apiKey: 'unused', maxRetries: 0 });
      for (const url of ['http://example.com/hooks', 'https://127.0.0.1/hooks', 'https://10.1.2.3/hooks', 'https://[::1]/hooks', 'https://169.254.169.254/latest', 'https://localhost/hooks']) {
        await expect(strictClient.webhooks.create({ name: 'x', url, event_types: ['fine_tuning.job.succeeded'] }), url).rejects.toMatchObject({ status: 400, param: 'url' });
      }
      // A name is checked on the addresses it resolves to as each attempt connects (DNS rebinding): the lookup the
      // deliverer's connections use refuses a name that resolves to loopback.
      const refused = await new Promise<Error | null>((resolve) => safeLookup(false)('localhost', {}, (err) => resolve(err)));
      expect(refused?.message).toMatch(/^(127\.0\.0\.1|::1) is a private, loopback or link-local address/);
      const allowed = await new Promise<Error | null>((resolve) => safeLookup(true)('localhost', {}, (err) => resolve(err)));
      expect(allowed).toBeNull();
      // And a URL refused is an attempt's error, never a request sent.
      const outcome = await sendEvent({ url: 'https://127.0.0.1:4443/hooks', secrets: ['whsec_AAAA'] }, { id: 'evt_1', object: 'event', type: 't', created_at: 0, data: {} }, false);
      expect(outcome).toEqual({ statusCode: null, error: expect.stringMatching(/^127\.0\.0\.1 is a private/) });
    } finally {
      await strictApp.close();
      await strict.close();
    }
    for (const address of ['127.0.0.1', '10.0.0.1', '172.20.1.1', '192.168.1.1', '169.254.1.1', '100.64.0.1', '0.0.0.0', '::1', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1']) expect(isPrivateAddress(address), address).toBe(true);
    for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) expect(isPrivateAddress(address), address).toBe(false);
  });
});
