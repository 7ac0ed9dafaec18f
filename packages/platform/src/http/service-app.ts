// The Fastify instance every service starts from: zod validation with exact 422 locs, the one error
// handler, request ids, authentication on every request, and the platform decorated once.
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { serializerCompiler } from 'fastify-type-provider-zod';
import type { Platform } from '../platform.ts';
import { newId } from '../ids.ts';
import { JSON_BODY_LIMIT, MAX_PARAM_LENGTH } from '@ftp/schema';
import { clientErrors, frameworkErrors, installErrorHandler, type ErrorStyle } from './error-handler.ts';
import { nullBody, zodValidatorCompiler } from './validation.ts';
import { instrumentRequests } from './metrics.ts';

declare module 'fastify' {
  interface FastifyInstance {
    platform: Platform;
  }
  interface FastifyRequest {
    /** The caller, resolved by the auth hook before validation; `local` when auth is off. */
    userId: string;
  }
}

/** A public route, which needs no credential in any mode: one whose contract says `security: []` (health), and the
 *  API documents (/docs and what Swagger UI loads). Every other route needs one in token and jwt modes, so nothing can
 *  be added that anonymous callers reach by accident. */
function isPublic(url: string | undefined, schema: unknown): boolean {
  const security = (schema as { security?: unknown[] } | undefined)?.security;
  if (Array.isArray(security) && security.length === 0) return true;
  return url === '/docs' || url?.startsWith('/docs/') === true;
}

export interface ServiceAppOptions {
  platform: Platform;
  /** Body limit for JSON requests; uploads have their own limit. */
  bodyLimit?: number;
  /** Error bodies: ours, or OpenAI's for the /v1 surface. */
  errorStyle?: ErrorStyle;
  /** The service's name in its request metrics (ftp_http_request_duration_seconds{service}). */
  service?: string;
  /** Where the caller's credential is, as an Authorization header value (default: the Authorization header). The
   *  Tinker service reads the tinker SDK's X-API-Key instead. */
  credential?: (headers: FastifyRequest['headers']) => string | undefined;
}

export function createServiceApp({ platform, bodyLimit = JSON_BODY_LIMIT, errorStyle = 'detail', service = 'service', credential = (headers) => headers.authorization }: ServiceAppOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: platform.logger as FastifyBaseLogger,
    genReqId: () => newId('req'),
    bodyLimit,
    // Ids are validated by their schemas (up to 256 characters); the default of 100 would answer 414 first.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: frameworkErrors(errorStyle),
    clientErrorHandler: clientErrors(errorStyle),
    // A `__proto__` or `constructor.prototype` key in a JSON body is dropped, never applied; no schema of ours names them.
    onProtoPoisoning: 'remove',
    onConstructorPoisoning: 'remove',
    // Routes carry their own time limits where a request waits on a job; the server only needs a guard.
    requestTimeout: 0,
  });
  // The Python SDK sends `Content-Type: application/json` with nothing after it on every POST and DELETE without a body
  // (a job's cancel, pause and resume, a batch's or an upload's cancel, checkpoint permissions), which Fastify's JSON
  // parser refuses as an empty body (a 400): read as no body instead. A route that needs one then answers 422 naming
  // the missing fields (validation.ts reads an absent body as `{}`).
  const parseJson = app.getDefaultJsonParser('remove', 'remove');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined);
    parseJson(request, body as string, done);
  });
  // Validators see null for an absent body too (Fastify's way), and give it the absent body's answer: a body that is
  // JSON null is refused here as the wrong type it is, before them.
  app.addHook('preValidation', async (request) => {
    if (request.body === null && request.routeOptions.schema?.body) throw nullBody();
  });
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandler(app, errorStyle);
  app.decorate('platform', platform);
  app.decorateRequest('userId', '');
  instrumentRequests(app, platform.metrics, service);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // /metrics is no user's: its route takes the operator's METRICS_TOKEN itself (http/metrics.ts)
    if (request.routeOptions.url === '/metrics') return;
    request.userId = await platform.authenticate(credential(request.headers), isPublic(request.routeOptions.url, request.routeOptions.schema));
  });
  return app;
}
