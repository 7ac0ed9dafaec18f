// Webhooks (#42): events as OpenAI sends them, signed per Standard Webhooks (webhook-id: the event's id, the same at
// every attempt; webhook-timestamp: when this attempt is sent; webhook-signature: `v1,<base64 HMAC-SHA256 of
// "<id>.<timestamp>.<body>">` with the secret's bytes, one per secret in force), which the official SDKs'
// `webhooks.unwrap` verifies within its 300 s tolerance. Every long-lived process runs a deliverer over the outbox
// (webhooks-repository.ts): it claims due deliveries (SKIP LOCKED: several processes never send one attempt twice),
// sends each on its own (a slow or failing endpoint holds only its own delivery, never a job or another endpoint), and
// records the outcome: delivered on a 2xx, else tried again after the next wait of WEBHOOK_BACKOFF_S, failed after the
// last. A process that dies mid-attempt leaves the delivery claimed until its lease ends; another takes it then.
// Targets: https, and never a private, loopback or link-local address (checked on the address connected to, at every
// attempt, so a name that resolves elsewhere later is caught), redirects not followed; WEBHOOK_ALLOW_PRIVATE lifts both.
import { createHmac, randomBytes } from 'node:crypto';
import dns from 'node:dns';
import net from 'node:net';
import { Agent, fetch } from 'undici';
import { invalidField, OPERATOR_ENDPOINT, type DueDelivery, type Platform, type UnprocessableEntity, type WebhookEndpointRow } from '@ftp/platform';
import type { WebhookEvent } from '@ftp/schema';

/** A new Standard Webhooks secret: whsec_ and 32 random bytes in base64. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** What the API shows of a secret: its last characters. */
export function secretHint(secret: string): string {
  return `whsec_…${secret.slice(-4)}`;
}

/** The webhook-signature entry of `body` for one secret. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export function eventObject(event: { event_id: string; type: string; data: Record<string, unknown>; created_at: Date }): WebhookEvent {
  return { id: event.event_id, object: 'event', type: event.type, created_at: Math.floor(event.created_at.getTime() / 1000), data: event.data };
}

// ------------------------------------------------------------------------------------------- targets

/** An address events may not go to unless WEBHOOK_ALLOW_PRIVATE: loopback, private, link-local, unique-local,
 *  carrier-grade NAT, unspecified, multicast, and IPv4 written as IPv6. */
export function isPrivateAddress(address: string): boolean {
  const list = new net.BlockList();
  for (const [prefix, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) {
    list.addSubnet(prefix, bits, 'ipv4');
  }
  for (const [prefix, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) list.addSubnet(prefix, bits, 'ipv6');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return isPrivateAddress(mapped);
  return list.check(address, net.isIPv6(address) ? 'ipv6' : 'ipv4');
}

export class WebhookTargetError extends Error {}

/** Refuses a URL events may not be sent to (its scheme, or a literal address); names are checked as they are
 *  connected to (safeAgent). */
export function checkTargetUrl(url: string, allowPrivate: boolean): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new WebhookTargetError(`${url} is not a URL`);
  }
  if (parsed.protocol !== 'https:' && !(allowPrivate && parsed.protocol === 'http:')) {
    throw new WebhookTargetError(`events go to https URLs only (${parsed.protocol} given)${allowPrivate ? '' : '; the operator may allow http with WEBHOOK_ALLOW_PRIVATE'}`);
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && net.isIP(host) && isPrivateAddress(host)) throw privateRefusal(host);
  if (!allowPrivate && (host === 'localhost' || host.endsWith('.localhost'))) throw privateRefusal(host);
}

const privateRefusal = (address: string) =>
  new WebhookTargetError(`${address} is a private, loopback or link-local address, which events are not sent to (the operator may allow it with WEBHOOK_ALLOW_PRIVATE)`);

/** The request's error for a URL events may not go to, at body.url (/v1 answers it as a 400 with param url). */
export function refusedTarget(err: WebhookTargetError): UnprocessableEntity {
  return invalidField(['body', 'url'], err.message);
}

/** The name lookup of webhook connections: dns.lookup's, refusing a name any of whose addresses is private, so
 *  the address connected to is the one checked (DNS rebinding). */
export function safeLookup(allowPrivate: boolean): typeof dns.lookup {
  return ((hostname: string, options: dns.LookupOptions, callback: (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const refused = allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address));
      if (refused) return callback(privateRefusal(refused.address) as NodeJS.ErrnoException, []);
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  }) as typeof dns.lookup;
}

/** An undici agent whose connections resolve names with safeLookup. */
function safeAgent(allowPrivate: boolean): Agent {
  return new Agent({ connect: { lookup: safeLookup(allowPrivate), timeout: 10_000 } });
}

// ------------------------------------------------------------------------------------------- sending

const TIMEOUT_MS = 10_000;
const RESPONSE_LIMIT = 4096;

export interface SendOutcome {
  statusCode: number | null;
  error: string | null;
}

/** POSTs one event, signed with every secret in force; never throws (what went wrong is the outcome's error). */
export async function sendEvent(target: { url: string; secrets: readonly string[] }, event: WebhookEvent, allowPrivate: boolean, agent = safeAgent(allowPrivate)): Promise<SendOutcome> {
  try {
    checkTargetUrl(target.url, allowPrivate);
    const body = JSON.stringify(event);
    const timestamp = Math.floor(Date.now() / 1000);
    const res = await fetch(target.url, {
      method: 'POST',
      body,
      redirect: 'manual',
      dispatcher: agent,
      signal: AbortSignal.timeout(TIMEOUT_MS),
      headers: {
        'content-type': 'application/json',
        'user-agent': 'ftp-webhooks/1',
        'webhook-id': event.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': target.secrets.map((s) => signWebhook(s, event.id, timestamp, body)).join(' '),
      },
    });
    // Only a little of the answer is read: a receiver's body says nothing we use.
    const reader = res.body?.getReader();
    let read = 0;
    while (reader && read < RESPONSE_LIMIT) {
      const { done, value } = await reader.read();
      if (done) break;
      read += value.byteLength;
    }
    await reader?.cancel().catch(() => {});
    return { statusCode: res.status, error: res.status >= 200 && res.status < 300 ? null : `answered ${res.status}` };
  } catch (err) {
    const cause = (err as { cause?: Error }).cause;
    return { statusCode: null, error: (cause?.message ?? (err as Error).message).slice(0, 500) };
  }
}

/** The secrets an endpoint signs with now: its own, and the previous one while it is kept. */
export function endpointSecrets(platform: Platform, endpoint: WebhookEndpointRow, now = new Date()): string[] {
  const secrets = [platform.secrets.openValue(endpoint.endpoint_id, endpoint.secret)];
  if (endpoint.old_secret && endpoint.old_secret_until && endpoint.old_secret_until > now) secrets.push(platform.secrets.openValue(endpoint.endpoint_id, endpoint.old_secret));
  return secrets;
}

/** Where a delivery goes and the secrets it is signed with; undefined when its endpoint is gone. */
async function targetOf(platform: Platform, delivery: DueDelivery): Promise<{ url: string; secrets: string[] } | undefined> {
  const { config } = platform;
  if (delivery.endpoint_id === OPERATOR_ENDPOINT) {
    return config.WEBHOOK_URL && config.WEBHOOK_SECRET ? { url: config.WEBHOOK_URL, secrets: [config.WEBHOOK_SECRET] } : undefined;
  }
  const endpoint = await platform.webhooks.endpointForDelivery(delivery.endpoint_id);
  return endpoint && { url: endpoint.url, secrets: endpointSecrets(platform, endpoint) };
}

/** One attempt of a claimed delivery, recorded: delivered, tried again after the next wait, or failed for good. */
async function deliver(platform: Platform, delivery: DueDelivery, agent: Agent): Promise<void> {
  const { config } = platform;
  let outcome: SendOutcome;
  try {
    const target = await targetOf(platform, delivery);
    if (!target) {
      await platform.webhooks.recordAttempt(delivery.delivery_id, { delivered: false, statusCode: null, error: 'the endpoint no longer exists', retryAt: null });
      return;
    }
    outcome = await sendEvent(target, eventObject({ ...delivery, created_at: delivery.event_created_at }), config.WEBHOOK_ALLOW_PRIVATE, agent);
  } catch (err) {
    // Its endpoint could not be read, or its secret opened (SECRETS_KEY changed): an attempt that failed, retried as any.
    outcome = { statusCode: null, error: (err as Error).message };
  }
  const delivered = outcome.error === null;
  const wait = config.WEBHOOK_BACKOFF_S[delivery.attempts - 1];
  const retryAt = delivered || wait === undefined ? null : new Date(Date.now() + wait * 1000);
  await platform.webhooks.recordAttempt(delivery.delivery_id, { delivered, ...outcome, retryAt });
  platform.metrics.webhookAttempts.inc({ outcome: delivered ? 'delivered' : retryAt ? 'retried' : 'failed' });
  if (!delivered) {
    platform.logger.warn(
      { delivery: delivery.delivery_id, event: delivery.event_id, type: delivery.type, attempt: delivery.attempts, error: outcome.error },
      retryAt ? `webhook delivery failed; tried again in ${wait} s` : 'webhook delivery failed for good after its last attempt',
    );
  }
}

export interface WebhookDeliverer {
  /** Looks for due deliveries now (after an event was written in this process). */
  kick(): void;
  stop(): Promise<void>;
}

const POLL_MS = 1000;
const BATCH = 16;
/** How long a claimed delivery is this process's: past it (the process died mid-attempt) another takes it. */
const LEASE_S = 60;
/** Deliveries that ended are kept this long for the deliveries list (OpenAI keeps events 30 days), then pruned hourly. */
export const WEBHOOK_RETENTION_DAYS = 30;
const PRUNE_MS = 3_600_000;

/** Delivers due events from this process until stopped: a round every second (or at `kick`), each claimed delivery
 *  sent on its own. */
export function startWebhookDeliverer(platform: Platform): WebhookDeliverer {
  const agent = safeAgent(platform.config.WEBHOOK_ALLOW_PRIVATE);
  const inFlight = new Set<Promise<void>>();
  let round: Promise<void> | undefined;
  let stopped = false;
  let warnedAt = 0;
  const run = () => {
    if (round || stopped) return;
    round = (async () => {
      const due = await platform.webhooks.claimDue(BATCH, LEASE_S);
      for (const delivery of due) {
        const sending = deliver(platform, delivery, agent)
          .catch((err: unknown) => platform.logger.warn({ err, delivery: delivery.delivery_id }, 'a webhook delivery could not be recorded; it is tried again when its claim ends'))
          .finally(() => inFlight.delete(sending));
        inFlight.add(sending);
      }
    })()
      .catch((err: unknown) => {
        // Once a minute at most: while the database is down this would say it every second.
        if (Date.now() - warnedAt < 60_000) return;
        warnedAt = Date.now();
        platform.logger.warn({ err }, 'looking for webhook deliveries failed; trying every second');
      })
      .finally(() => (round = undefined));
  };
  const timer = setInterval(run, POLL_MS);
  timer.unref();
  const prune = () => {
    platform.webhooks.prune(WEBHOOK_RETENTION_DAYS).catch((err: unknown) => platform.logger.warn({ err }, 'pruning old webhook deliveries failed; tried again in an hour'));
  };
  const pruner = setInterval(prune, PRUNE_MS);
  pruner.unref();
  return {
    kick: run,
    async stop() {
      stopped = true;
      clearInterval(timer);
      clearInterval(pruner);
      await round;
      await Promise.all(inFlight);
      await agent.close();
    },
  };
}
