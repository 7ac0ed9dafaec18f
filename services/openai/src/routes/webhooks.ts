// /v1/webhook_endpoints: OpenAI's webhook endpoints, per user (#42). The signing secret is made here, sealed into the
// endpoint's row (SECRETS_KEY, the endpoint id as owner: it never expires; rotate_secret replaces it) and shown once.
// What is sent, and when, is @ftp/jobs/runtime webhooks.ts; what is recorded as an event, the repositories' status updates.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { newId, NotFound, type WebhookDeliveryRow, type WebhookEndpointRow } from '@ftp/platform';
import { checkTargetUrl, endpointSecrets, newSigningSecret, refusedTarget, secretHint, sendEvent, WebhookTargetError } from '@ftp/jobs/runtime';
import { openaiRoutes, WEBHOOK_EVENT_TYPES } from '@ftp/schema';
import { listPage, seconds } from '../presenters.ts';

const KEEP_OLD_SECRET_MS = 24 * 3600 * 1000;

function presentEndpoint(row: WebhookEndpointRow) {
  return {
    id: row.endpoint_id,
    object: 'webhook_endpoint' as const,
    created_at: seconds(row.created_at),
    updated_at: seconds(row.updated_at),
    name: row.name,
    url: row.url,
    event_types: row.event_types,
    signing_secret_hint: row.secret_hint,
  };
}

function presentDelivery(row: WebhookDeliveryRow & { type: string }) {
  return {
    id: row.delivery_id,
    object: 'webhook_endpoint.delivery' as const,
    event_id: row.event_id,
    event_type: row.type,
    status: row.status,
    attempts: row.attempts,
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    next_attempt_at: row.status === 'pending' ? seconds(row.next_attempt_at) : null,
    delivered_at: row.delivered_at ? seconds(row.delivered_at) : null,
    created_at: seconds(row.created_at),
  };
}

export async function webhookRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;
  const allowPrivate = platform.config.WEBHOOK_ALLOW_PRIVATE;

  const checked = (url: string | undefined) => {
    if (url === undefined) return;
    try {
      checkTargetUrl(url, allowPrivate);
    } catch (err) {
      if (err instanceof WebhookTargetError) throw refusedTarget(err);
      throw err;
    }
  };
  const own = async (userId: string, endpointId: string) => {
    const row = await platform.webhooks.getEndpoint(userId, endpointId);
    if (!row) throw new NotFound('webhook endpoint', endpointId);
    return row;
  };

  routes.route({
    ...openaiRoutes.createWebhookEndpoint,
    handler: async (request) => {
      const { name, url, event_types } = request.body;
      checked(url);
      const endpointId = newId('whe');
      const secret = newSigningSecret();
      const row = await platform.webhooks.insertEndpoint({
        endpoint_id: endpointId, user_id: request.userId, name, url, event_types: [...new Set(event_types)],
        secret: platform.secrets.sealValue(endpointId, secret), secret_hint: secretHint(secret),
      });
      return { ...presentEndpoint(row), signing_secret: secret };
    },
  });

  routes.route({
    ...openaiRoutes.listWebhookEndpoints,
    handler: async (request) => listPage((await platform.webhooks.listEndpoints(request.userId)).map(presentEndpoint), request.query.after, request.query.limit),
  });

  routes.route({
    ...openaiRoutes.retrieveWebhookEndpoint,
    handler: async (request) => presentEndpoint(await own(request.userId, request.params.webhook_endpoint_id)),
  });

  routes.route({
    ...openaiRoutes.updateWebhookEndpoint,
    handler: async (request) => {
      const { name, url, event_types } = request.body;
      checked(url);
      const row = await platform.webhooks.updateEndpoint(request.userId, request.params.webhook_endpoint_id, {
        ...(name !== undefined ? { name } : {}),
        ...(url !== undefined ? { url } : {}),
        ...(event_types !== undefined ? { event_types: [...new Set(event_types)] } : {}),
      });
      if (!row) throw new NotFound('webhook endpoint', request.params.webhook_endpoint_id);
      return presentEndpoint(row);
    },
  });

  routes.route({
    ...openaiRoutes.deleteWebhookEndpoint,
    handler: async (request) => {
      const id = request.params.webhook_endpoint_id;
      if (!(await platform.webhooks.deleteEndpoint(request.userId, id))) throw new NotFound('webhook endpoint', id);
      return { id, object: 'webhook_endpoint.deleted' as const, deleted: true as const };
    },
  });

  routes.route({
    ...openaiRoutes.rotateWebhookSecret,
    handler: async (request) => {
      const id = request.params.webhook_endpoint_id;
      await own(request.userId, id);
      const secret = newSigningSecret();
      const keepOld = request.body?.keep_old_secret_active_for_24_hours === true ? new Date(Date.now() + KEEP_OLD_SECRET_MS) : null;
      const row = await platform.webhooks.rotateSecret(request.userId, id, platform.secrets.sealValue(id, secret), secretHint(secret), keepOld);
      if (!row) throw new NotFound('webhook endpoint', id);
      return { ...presentEndpoint(row), signing_secret: secret };
    },
  });

  routes.route({
    ...openaiRoutes.testWebhookEndpoint,
    handler: async (request) => {
      const endpoint = await own(request.userId, request.params.webhook_endpoint_id);
      const type = request.body.event_type;
      checked(endpoint.url);
      // A sample: its id is an event's, its data names nothing real.
      const event = { id: newId('evt'), object: 'event' as const, type, created_at: seconds(new Date()), data: { id: `${type.split('.')[0]}_test` } };
      const outcome = await sendEvent({ url: endpoint.url, secrets: endpointSecrets(platform, endpoint) }, event, allowPrivate);
      return { object: 'webhook_endpoint.test' as const, event_type: type, status_code: outcome.statusCode ?? 0, success: true as const, webhook_endpoint_id: endpoint.endpoint_id };
    },
  });

  routes.route({
    ...openaiRoutes.listWebhookDeliveries,
    handler: async (request) => {
      const endpoint = await own(request.userId, request.params.webhook_endpoint_id);
      const rows = await platform.webhooks.deliveries(request.userId, endpoint.endpoint_id);
      return { object: 'list' as const, data: rows.map(presentDelivery), has_more: false };
    },
  });

  routes.route({
    ...openaiRoutes.redeliverWebhook,
    handler: async (request) => {
      const { webhook_endpoint_id: endpointId, delivery_id: deliveryId } = request.params;
      await own(request.userId, endpointId);
      const row = await platform.webhooks.redeliver(request.userId, endpointId, deliveryId);
      if (!row) throw new NotFound('delivery', deliveryId);
      return presentDelivery(row);
    },
  });

  routes.route({
    ...openaiRoutes.listWebhookEventTypes,
    handler: async () => ({ object: 'list' as const, data: [...WEBHOOK_EVENT_TYPES] }),
  });
}
