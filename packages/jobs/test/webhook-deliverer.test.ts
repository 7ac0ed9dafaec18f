// The webhook deliverer (#42): an attempt that failed is tried again after its wait by whichever process delivers
// next, so a deliverer stopped mid-backoff (its process restarted) loses nothing and sends nothing twice; every attempt
// carries the event's webhook-id and is signed when it is sent. Two deliverers on one real PostgreSQL (two processes
// of a scaled-out deployment) send each event once between them; an endpoint that does not answer holds no other.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { newId, type Platform } from '@ftp/platform';
import { createDatabase } from '../../../test/servers/scaled-env.ts';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { registerDeploymentMetrics } from '../src/runtime/deployment-metrics.ts';
import { newSigningSecret, signWebhook, startWebhookDeliverer } from '../src/runtime/webhooks.ts';

let platform: TestPlatform;
let receiver: http.Server;
let url: string;
const received: Array<{ path: string; headers: http.IncomingHttpHeaders; body: string }> = [];
const answers: number[] = [];
/** Requests to /slow are held until this is called. */
let releaseSlow: () => void = () => {};
const slowReleased = new Promise<void>((resolve) => (releaseSlow = resolve));

beforeAll(async () => {
  platform = await openTestPlatform({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_BACKOFF_S: '1,1' });
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ path: req.url!, headers: req.headers, body });
      if (req.url === '/slow') void slowReleased.then(() => res.writeHead(200).end());
      else res.writeHead(req.url === '/hooks' ? answers.shift() ?? 200 : 200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
});
afterAll(async () => {
  releaseSlow();
  receiver?.close();
  await platform?.close();
});

it('a deliverer stopped after a failed attempt leaves the event to the next one, which sends it once', async () => {
  const endpointId = newId('whe');
  const secret = newSigningSecret();
  await platform.webhooks.insertEndpoint({ endpoint_id: endpointId, user_id: 'u', name: 'e', url, event_types: ['fine_tuning.job.succeeded'], secret: platform.secrets.sealValue(endpointId, secret), secret_hint: 'h' });
  await platform.db.transaction((tx) => platform.webhooks.recordEvent(tx, 'u', 'fine_tuning.job.succeeded', { id: 'job_1' }));
  answers.push(500);
  const first = startWebhookDeliverer(platform);
  first.kick();
  await expect.poll(() => received.length, { timeout: 10_000 }).toBe(1);
  await first.stop(); // the process stops during the wait before the second attempt
  const [pending] = await platform.webhooks.deliveries('u', endpointId);
  expect(pending).toMatchObject({ status: 'pending', attempts: 1, last_status_code: 500 });

  const second = startWebhookDeliverer(platform);
  try {
    await expect.poll(async () => (await platform.webhooks.deliveries('u', endpointId))[0]!.status, { timeout: 10_000 }).toBe('delivered');
  } finally {
    await second.stop();
  }
  expect(received).toHaveLength(2);
  const [failed, delivered] = received;
  expect(delivered!.headers['webhook-id']).toBe(failed!.headers['webhook-id']);
  for (const attempt of received) {
    const timestamp = Number(attempt.headers['webhook-timestamp']);
    expect(attempt.headers['webhook-signature']).toBe(signWebhook(secret, String(attempt.headers['webhook-id']), timestamp, attempt.body));
  }
  expect(JSON.parse(delivered!.body)).toMatchObject({ object: 'event', type: 'fine_tuning.job.succeeded', data: { id: 'job_1' } });
  expect((await platform.webhooks.deliveries('u', endpointId))[0]).toMatchObject({ attempts: 2, last_status_code: 200, last_error: null });
  const metrics = await platform.metrics.render();
  expect(metrics).toContain('ftp_webhook_attempts_total{outcome="retried"} 1');
  expect(metrics).toContain('ftp_webhook_attempts_total{outcome="delivered"} 1');
});

async function endpointOn(on: Platform, user: string, path: string): Promise<string> {
  const endpointId = newId('whe');
  await on.webhooks.insertEndpoint({
    endpoint_id: endpointId, user_id: user, name: path, url: url.replace('/hooks', path), event_types: ['fine_tuning.job.failed'],
    secret: on.secrets.sealValue(endpointId, newSigningSecret()), secret_hint: 'h',
  });
  return endpointId;
}

it('an endpoint that does not answer holds no other: the next event reaches a second endpoint at once', async () => {
  const user = `u-${newId('key')}`;
  const slow = await endpointOn(platform, user, '/slow');
  const fast = await endpointOn(platform, user, '/fast');
  const deliverer = startWebhookDeliverer(platform);
  try {
    await platform.db.transaction((tx) => platform.webhooks.recordEvent(tx, user, 'fine_tuning.job.failed', { id: 'job_a' }));
    deliverer.kick();
    await expect.poll(() => received.filter((r) => r.path === '/slow').length, { timeout: 10_000 }).toBe(1);
    // The slow endpoint holds its request; a second event still reaches the fast one (both of its events delivered).
    await platform.db.transaction((tx) => platform.webhooks.recordEvent(tx, user, 'fine_tuning.job.failed', { id: 'job_b' }));
    deliverer.kick();
    await expect.poll(async () => (await platform.webhooks.deliveries(user, fast)).map((d) => d.status), { timeout: 10_000 }).toEqual(['delivered', 'delivered']);
    expect((await platform.webhooks.deliveries(user, slow)).map((d) => d.status)).toContain('pending');
    registerDeploymentMetrics(platform);
    expect(await platform.metrics.render()).toMatch(/^ftp_webhook_deliveries_pending [1-9]/m);
    expect(await platform.metrics.render()).toMatch(/^ftp_webhook_oldest_pending_seconds (?!0\n)\d/m);
    releaseSlow();
    await expect.poll(async () => (await platform.webhooks.deliveries(user, slow)).map((d) => d.status), { timeout: 10_000 }).toEqual(['delivered', 'delivered']);
  } finally {
    await deliverer.stop();
  }
});

it('two deliverers on one PostgreSQL send each of 40 events once between them', async () => {
  const env = {
    DATABASE_URL: await createDatabase(inject('servers').postgresUrl, `ftp_webhooks_${randomBytes(4).toString('hex')}`),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    WEBHOOK_ALLOW_PRIVATE: 'true',
  };
  const [a, b] = await Promise.all([openTestPlatform(env), openTestPlatform(env)]);
  try {
    const claimed = [0, 0];
    [a!, b!].forEach((p, i) => {
      const claimDue = p.webhooks.claimDue.bind(p.webhooks);
      p.webhooks.claimDue = async (...args) => {
        const rows = await claimDue(...args);
        claimed[i]! += rows.length;
        return rows;
      };
    });
    const user = `u-${newId('key')}`;
    const endpointId = await endpointOn(a!, user, '/many');
    for (let i = 0; i < 40; i++) await a!.db.transaction((tx) => a!.webhooks.recordEvent(tx, user, 'fine_tuning.job.failed', { id: `job_${i}` }));
    const deliverers = [startWebhookDeliverer(a!), startWebhookDeliverer(b!)];
    deliverers.forEach((d) => d.kick());
    await expect.poll(async () => (await b!.webhooks.deliveries(user, endpointId)).filter((d) => d.status === 'delivered').length, { timeout: 30_000 }).toBe(40);
    await Promise.all(deliverers.map((d) => d.stop()));
    const sent = received.filter((r) => r.path === '/many');
    expect(sent).toHaveLength(40);
    expect(new Set(sent.map((r) => r.headers['webhook-id'])).size).toBe(40);
    expect(claimed[0]! + claimed[1]!).toBe(40);
    expect(Math.min(...claimed), `each deliverer claimed some (${claimed.join(' and ')})`).toBeGreaterThan(0);
  } finally {
    await Promise.all([a?.close(), b?.close()]);
  }
});
