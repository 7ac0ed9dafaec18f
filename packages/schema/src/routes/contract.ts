// The shape of a route contract and the responses many routes share. A contract is spread into
// `app.withTypeProvider<ZodTypeProvider>().route({ ...contract, handler })`, so it keeps its literal
// types (`defineRoute`) and the handler sees typed params, query, body and reply.
import type { FastifySchema, HTTPMethods } from 'fastify';
import type {} from '@fastify/swagger'; // adds summary, tags, security, … to FastifySchema
import { z } from 'zod';
import { ErrorBody, HealthBody, ValidationErrorBody } from '../common.ts';

export interface RouteContract {
  readonly method: HTTPMethods;
  readonly url: string;
  readonly schema: FastifySchema & { readonly operationId: string; readonly summary: string };
}

/** Identity, but infers the narrowest type so that the zod schemas survive into route(). */
export const defineRoute = <const Route extends RouteContract>(route: Route): Route => route;

export const bearerRequired = [{ bearerAuth: [] }] as const;
/** Accepted and used when present; required only with AUTH_REQUIRE_ALL=true. */
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
      description: `Reports whether the ${service} service can reach its database, blob storage and queue.`,
      tags: ['health'],
      response: {
        200: HealthBody.describe('Every dependency is reachable'),
        500: internalError,
        503: HealthBody.describe('At least one dependency is unreachable; checks says which'),
      },
    },
  });
}
