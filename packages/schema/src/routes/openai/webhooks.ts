// Route contracts of /v1/webhook_endpoints and /v1/webhook_event_types.
import { z } from 'zod';
import { ListQuery } from '../../openai/common.ts';
import {
  CreateWebhookEndpointRequest,
  RotateWebhookSecretRequest,
  TestWebhookEndpointRequest,
  UpdateWebhookEndpointRequest,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointDeleted,
  WebhookEndpointList,
  WebhookEndpointTestResult,
  WebhookEndpointWithSecret,
  WebhookEventTypeList,
} from '../../openai/webhooks.ts';
import { bearerRequired, defineRoute } from '../contract.ts';
import { common, error, invalid, notFound } from './common.ts';

const EndpointId = z.object({ webhook_endpoint_id: z.string().min(1).max(256) });
const webhookTags = ['webhooks'];
const refusedTarget = error('The URL is not one events may be sent to (param url): not https, or a private, loopback or link-local address (WEBHOOK_ALLOW_PRIVATE)');

export const webhookRoutes = {
  createWebhookEndpoint: defineRoute({
    method: 'POST',
    url: '/v1/webhook_endpoints',
    schema: {
      operationId: 'createWebhookEndpoint',
      summary: 'Send events to a URL',
      description:
        'OpenAI’s webhook endpoints: each event of the caller whose type is in event_types is POSTed to url as OpenAI’s event object, ' +
        'signed per Standard Webhooks with signing_secret (shown once here), which client.webhooks.unwrap verifies. At least once: ' +
        'a delivery is retried with backoff for over 24 hours (WEBHOOK_BACKOFF_S) with the same webhook-id, freshly signed at each attempt.',
      tags: webhookTags,
      security: bearerRequired,
      body: CreateWebhookEndpointRequest,
      response: { 200: WebhookEndpointWithSecret, 400: refusedTarget, ...common },
    },
  }),

  listWebhookEndpoints: defineRoute({
    method: 'GET',
    url: '/v1/webhook_endpoints',
    schema: {
      operationId: 'listWebhookEndpoints',
      summary: 'The caller’s webhook endpoints',
      description: 'Newest first.',
      tags: webhookTags,
      security: bearerRequired,
      querystring: ListQuery,
      response: { 200: WebhookEndpointList, 400: invalid, ...common },
    },
  }),

  retrieveWebhookEndpoint: defineRoute({
    method: 'GET',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id',
    schema: {
      operationId: 'retrieveWebhookEndpoint',
      summary: 'A webhook endpoint',
      description: 'Without its secret (signing_secret_hint shows its end).',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId,
      response: { 200: WebhookEndpoint, 400: invalid, 404: notFound('webhook endpoint'), ...common },
    },
  }),

  updateWebhookEndpoint: defineRoute({
    method: 'POST',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id',
    schema: {
      operationId: 'updateWebhookEndpoint',
      summary: 'Change a webhook endpoint',
      description: 'Its name, url or event_types (the whole list); events already written keep going where they were meant to.',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId,
      body: UpdateWebhookEndpointRequest,
      response: { 200: WebhookEndpoint, 400: refusedTarget, 404: notFound('webhook endpoint'), ...common },
    },
  }),

  deleteWebhookEndpoint: defineRoute({
    method: 'DELETE',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id',
    schema: {
      operationId: 'deleteWebhookEndpoint',
      summary: 'Stop sending events to an endpoint',
      description: 'Its deliveries not yet made are dropped.',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId,
      response: { 200: WebhookEndpointDeleted, 400: invalid, 404: notFound('webhook endpoint'), ...common },
    },
  }),

  rotateWebhookSecret: defineRoute({
    method: 'POST',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id/rotate_secret',
    schema: {
      operationId: 'rotateWebhookSecret',
      summary: 'A new signing secret',
      description: 'Shown once. The previous one stops signing at once, or signs beside it for 24 hours with keep_old_secret_active_for_24_hours.',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId,
      body: RotateWebhookSecretRequest.optional(),
      response: { 200: WebhookEndpointWithSecret, 400: invalid, 404: notFound('webhook endpoint'), ...common },
    },
  }),

  testWebhookEndpoint: defineRoute({
    method: 'POST',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id/test',
    schema: {
      operationId: 'testWebhookEndpoint',
      summary: 'Send a sample event now',
      description: 'One signed event of event_type (its data names no real resource), sent at once, not retried; status_code is what the endpoint answered.',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId,
      body: TestWebhookEndpointRequest,
      response: { 200: WebhookEndpointTestResult, 400: refusedTarget, 404: notFound('webhook endpoint'), ...common },
    },
  }),

  listWebhookDeliveries: defineRoute({
    method: 'GET',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id/deliveries',
    schema: {
      operationId: 'listWebhookDeliveries',
      summary: 'The events sent to an endpoint (ours)',
      description: 'The last 100, newest first: status (pending, delivered, failed), attempts, the last response code or error.',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId,
      response: { 200: WebhookDeliveryList, 400: invalid, 404: notFound('webhook endpoint'), ...common },
    },
  }),

  redeliverWebhook: defineRoute({
    method: 'POST',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id/deliveries/:delivery_id/redeliver',
    schema: {
      operationId: 'redeliverWebhook',
      summary: 'Send an event again (ours)',
      description: 'The delivery is pending again and goes out at once, with its event’s webhook-id.',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId.extend({ delivery_id: z.string().min(1).max(256) }),
      response: { 200: WebhookDelivery, 400: invalid, 404: notFound('delivery of this endpoint'), ...common },
    },
  }),

  listWebhookEventTypes: defineRoute({
    method: 'GET',
    url: '/v1/webhook_event_types',
    schema: {
      operationId: 'listWebhookEventTypes',
      summary: 'The event types an endpoint can subscribe to',
      description: 'OpenAI’s fine_tuning.job.* and batch.*, and ours (fine_tuning.job.started, export.*, evaluation.completed).',
      tags: webhookTags,
      security: bearerRequired,
      response: { 200: WebhookEventTypeList, ...common },
    },
  }),
};
