// The shape of a route contract and the responses many routes share. A contract is spread into
// `app.withTypeProvider<ZodTypeProvider>().route({ ...contract, handler })`, so it keeps its literal
// types (`defineRoute`) and the handler sees typed params, query, body and reply.
import type { FastifySchema, HTTPMethods } from 'fastify';
import type {} from '@fastify/swagger'; // adds summary, tags, security, … to FastifySchema
import { z } from 'zod';
import { ErrorBody, HealthBody, ValidationErrorBody } from '../common.ts';

/** Longest path parameter the router accepts, measured as sent: an id of 256 characters of any script, percent-encoded
 *  (up to 12 characters each), still reaches its schema and gets a 422 past 256; only longer paths are a 414. */
export const MAX_PARAM_LENGTH = 4096;
/** Every JSON body; uploads stream under MAX_UPLOAD_BYTES instead. */
export const JSON_BODY_LIMIT = 16 * 1024 * 1024;
/** What a multipart request may hold besides its one file (@fastify/multipart's limits). */
export const MULTIPART_LIMITS = { fieldSize: 64 * 1024, fields: 10, files: 1, parts: 12 } as const;

export interface RouteContract {
  readonly method: HTTPMethods;
  readonly url: string;
  readonly schema: FastifySchema & { readonly operationId: string; readonly summary: string };
}

/** Methods whose requests carry a body Fastify parses (and so can refuse) before the handler runs. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * A contract with what the framework answers before its handler runs added to its documented responses, in the
 * service's error body (ours, or OpenAI's on /v1): 414 when a path parameter is longer than MAX_PARAM_LENGTH; with a
 * body, 400 (not valid JSON or multipart), 413 (over JSON_BODY_LIMIT, MAX_UPLOAD_BYTES or MULTIPART_LIMITS) and 415
 * (another media type). A status the contract documents itself keeps its own description.
 */
export function withFrameworkErrors(route: RouteContract, error: z.ZodType): RouteContract {
  const response: Record<string, unknown> = { ...(route.schema.response as Record<string, unknown> | undefined) };
  const add = (status: number, description: string) => {
    response[status] ??= error.describe(description);
  };
  if (route.schema.params) add(414, `A path parameter is longer than ${MAX_PARAM_LENGTH} characters as sent (percent-encoded)`);
  if (([] as string[]).concat(route.method).some((method) => BODY_METHODS.has(method))) {
    add(400, 'The body is not valid JSON (or, for an upload, not valid multipart/form-data)');
    add(413, `The body is too large: JSON over ${JSON_BODY_LIMIT / 1024 / 1024} MiB, a file over MAX_UPLOAD_BYTES, a multipart field over ${MULTIPART_LIMITS.fieldSize / 1024} KiB or more than ${MULTIPART_LIMITS.fields} fields`);
    add(415, 'The body has a media type this endpoint does not read; send application/json (multipart/form-data for uploads)');
  }
  return { ...route, schema: { ...route.schema, response } };
}

/** Identity, but infers the narrowest type so that the zod schemas survive into route(). */
export const defineRoute = <const Route extends RouteContract>(route: Route): Route => route;

export const bearerRequired = [{ bearerAuth: [] }] as const;
/** Documented as optional because AUTH_MODE=none needs none; token and jwt modes require it on every endpoint but the
 *  public ones (health, documents), which say `security: []`. */
export const bearerOptional = [{}, { bearerAuth: [] }] as const;

export const invalidRequest = ValidationErrorBody.describe('The request does not match the schema; each detail entry names the field by loc');
export const malformedJson = ErrorBody.describe('The body is not valid JSON');
export const unauthorized = ErrorBody.describe('The bearer token is missing or invalid');
export const dependencyDown = ErrorBody.describe('A dependency (database, storage, queue or model hub) is unreachable; detail names it');
export const internalError = ErrorBody.describe('Internal error; detail is "internal error" and request_id identifies the log entry');

/** What any endpoint behind authentication and the database can answer besides its own outcomes. */
export const serviceErrors = { 401: unauthorized, 500: internalError, 503: dependencyDown } as const;

export const notFound = (what: string) => ErrorBody.describe(`No ${what} with this id belongs to the caller`);
export const conflict = (why: string) => ErrorBody.describe(why);

/** A non-JSON response body, documented under its own media type. */
export function mediaResponse<const MediaType extends string, Schema extends z.ZodType>(mediaType: MediaType, description: string, schema: Schema) {
  return { description, content: { [mediaType]: { schema } } as { [K in MediaType]: { schema: Schema } } };
}

export function healthRoute(service: string) {
  return defineRoute({
    method: 'GET',
    url: '/health',
    schema: {
      operationId: 'getHealth',
      summary: 'Service health',
      description: `Reports whether the ${service} service can reach its database, blob storage and queue. Public in every auth mode.`,
      tags: ['health'],
      security: [],
      response: {
        200: HealthBody.describe('Every dependency is reachable'),
        500: internalError,
        503: HealthBody.describe('At least one dependency is unreachable; checks says which'),
      },
    },
  });
}

/** GET /metrics on every service: the process's Prometheus metrics (README, Metrics). `errorBody`: how the service
 *  writes its errors (ours, or OpenAI's on the /v1 surface). */
export function metricsRoute(errorBody: z.ZodType = ErrorBody) {
  return defineRoute({
    method: 'GET',
    url: '/metrics',
    schema: {
      operationId: 'getMetrics',
      summary: 'Prometheus metrics',
      description: 'This process\'s metrics in the Prometheus text format: requests, jobs, queues, workers, generation. With AUTH_MODE none it is public; in token and jwt modes it takes the operator\'s METRICS_TOKEN as `Authorization: Bearer …`, never a user\'s key, and answers 403 while METRICS_TOKEN is unset.',
      tags: ['health'],
      security: bearerOptional,
      response: {
        200: mediaResponse('text/plain', 'Prometheus text format 0.0.4', z.string()),
        401: errorBody.describe('METRICS_TOKEN is set and the request did not send it'),
        403: errorBody.describe('token and jwt modes: METRICS_TOKEN is unset, so no one may read the metrics'),
        500: errorBody === ErrorBody ? internalError : errorBody.describe('Internal error'),
      },
    },
  });
}

