// /v1/webhook_endpoints and /v1/webhook_event_types: where a user's events are sent, and how their deliveries went.
import { z } from 'zod';
import { nullable, UnixSeconds } from './common.ts';

/** The events sent (#42): OpenAI's for what this stack has (fine-tuning jobs, batches), and ours where OpenAI has none. */
export const WEBHOOK_EVENT_TYPES = [
  'fine_tuning.job.succeeded',
  'fine_tuning.job.failed',
  'fine_tuning.job.cancelled',
  'fine_tuning.job.started',
  'batch.completed',
  'batch.failed',
  'batch.expired',
  'batch.cancelled',
  'export.completed',
  'export.failed',
  'evaluation.completed',
] as const;
export const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES);

const endpointFields = {
  id: z.string(),
  object: z.literal('webhook_endpoint'),
  created_at: UnixSeconds,
  updated_at: UnixSeconds.describe('The last change of its URL, name, event types or secret'),
  name: z.string(),
  url: z.string().describe('Where the events are POSTed, signed (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature)'),
  event_types: z.array(z.string()),
  signing_secret_hint: nullable(z.string()).describe('The secret’s last characters'),
};

export const WebhookEndpoint = z.object(endpointFields).meta({ id: 'WebhookEndpoint', description: 'Where a user’s events are sent' });
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

export const WebhookEndpointWithSecret = z
  .object({ ...endpointFields, signing_secret: z.string().describe('whsec_…: shown this once (at create and rotate_secret); what client.webhooks.unwrap verifies with') })
  .meta({ id: 'WebhookEndpointWithSecret' });
export type WebhookEndpointWithSecret = z.infer<typeof WebhookEndpointWithSecret>;

export const WebhookEndpointList = z
  .object({ object: z.literal('list'), data: z.array(WebhookEndpoint), has_more: z.boolean(), first_id: nullable(z.string()), last_id: nullable(z.string()) })
  .meta({ id: 'WebhookEndpointList' });
export type WebhookEndpointList = z.infer<typeof WebhookEndpointList>;

const EndpointName = z.string().min(1).max(256).regex(/^[^\u0000]*$/, 'no NUL character');
const EndpointUrl = z.string().max(2048).url().describe('https (http and private addresses only where the operator set WEBHOOK_ALLOW_PRIVATE)');
const EndpointEventTypes = z.array(WebhookEventType).min(1).max(WEBHOOK_EVENT_TYPES.length);

export const CreateWebhookEndpointRequest = z
  .object({ name: EndpointName, url: EndpointUrl, event_types: EndpointEventTypes })
  .meta({ id: 'CreateWebhookEndpointRequest', examples: [{ name: 'jobs', url: 'https://example.com/webhooks', event_types: ['fine_tuning.job.succeeded', 'fine_tuning.job.failed'] }] });

export const UpdateWebhookEndpointRequest = z
  .object({ name: EndpointName.optional(), url: EndpointUrl.optional(), event_types: EndpointEventTypes.optional() })
  .meta({ id: 'UpdateWebhookEndpointRequest' });

export const RotateWebhookSecretRequest = z
  .object({ keep_old_secret_active_for_24_hours: z.boolean().optional().describe('Sign with the previous secret too for 24 h (two signatures in webhook-signature)') })
  .meta({ id: 'RotateWebhookSecretRequest' });

export const TestWebhookEndpointRequest = z.object({ event_type: WebhookEventType }).meta({ id: 'TestWebhookEndpointRequest' });

export const WebhookEndpointTestResult = z
  .object({
    object: z.literal('webhook_endpoint.test'),
    event_type: z.string(),
    status_code: z.number().int().describe('What the endpoint answered (0: it could not be reached; the message is in the deliveries of no event)'),
    success: z.literal(true),
    webhook_endpoint_id: z.string(),
  })
  .meta({ id: 'WebhookEndpointTestResult' });
export type WebhookEndpointTestResult = z.infer<typeof WebhookEndpointTestResult>;

export const WebhookEndpointDeleted = z
  .object({ id: z.string(), object: z.literal('webhook_endpoint.deleted'), deleted: z.literal(true) })
  .meta({ id: 'WebhookEndpointDeleted' });

export const WebhookEventTypeList = z.object({ object: z.literal('list'), data: z.array(z.string()) }).meta({ id: 'WebhookEventTypeList' });
export type WebhookEventTypeList = z.infer<typeof WebhookEventTypeList>;

export const WebhookDelivery = z
  .object({
    id: z.string(),
    object: z.literal('webhook_endpoint.delivery'),
    event_id: z.string().describe('The event’s id: webhook-id, the same at every attempt'),
    event_type: z.string(),
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int(),
    last_status_code: nullable(z.number().int()),
    last_error: nullable(z.string()),
    next_attempt_at: nullable(UnixSeconds).describe('When it is tried again (pending)'),
    delivered_at: nullable(UnixSeconds),
    created_at: UnixSeconds,
  })
  .meta({ id: 'WebhookDelivery', description: 'One event sent to one endpoint, and how its attempts went (ours: OpenAI shows deliveries in its dashboard only)' });
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const WebhookDeliveryList = z.object({ object: z.literal('list'), data: z.array(WebhookDelivery), has_more: z.boolean() }).meta({ id: 'WebhookDeliveryList' });
export type WebhookDeliveryList = z.infer<typeof WebhookDeliveryList>;

/** An event as it is sent: OpenAI's event object. */
export const WebhookEvent = z
  .object({ id: z.string(), object: z.literal('event'), type: z.string(), created_at: UnixSeconds, data: z.record(z.string(), z.unknown()) })
  .meta({ id: 'WebhookEvent' });
export type WebhookEvent = z.infer<typeof WebhookEvent>;
