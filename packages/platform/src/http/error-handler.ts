// The one place where thrown errors become HTTP error bodies (spec/decisions.md, Errors):
// 422 → {detail:[{loc,msg,type}]}, other client errors → {detail:"…"}, 500 → {detail:"internal error",request_id}.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MAX_PARAM_LENGTH, MULTIPART_LIMITS, validationDetail } from '@ftp/schema';
import { AppError, UnprocessableEntity, type ValidationIssue } from '../errors.ts';
import { BlobNotFound, InvalidBlobKey } from '../blobs/blob-store.ts';
import { locationOf, RequestValidationError } from './validation.ts';

/** Fastify's own client-error codes, with the sentence a client can act on. */
const FASTIFY_CLIENT_ERRORS: Record<string, (err: FastifyError) => [number, string]> = {
  FST_ERR_CTP_INVALID_JSON_BODY: (err) => [400, `the request body is not valid JSON: ${err.message.replace(/^.*?JSON[^:]*: /, '')}`],
  FST_ERR_CTP_BODY_TOO_LARGE: () => [413, 'the request body is larger than this endpoint accepts'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (err) => [415, `${err.message}; send application/json (or multipart/form-data for uploads)`],
  FST_REQ_FILE_TOO_LARGE: () => [413, 'the uploaded file is larger than MAX_UPLOAD_BYTES'],
  FST_INVALID_MULTIPART_CONTENT_TYPE: () => [400, 'the request is not multipart/form-data; send the file as a `file` part'],
  FST_PARTS_LIMIT: () => [413, `the multipart request has more parts than the ${MULTIPART_LIMITS.parts} accepted; send one file part and the documented fields`],
  FST_FILES_LIMIT: () => [413, 'the multipart request has more than one file part; send one file per request'],
  FST_FIELDS_LIMIT: () => [413, `the multipart request has more than ${MULTIPART_LIMITS.fields} fields; send only the documented fields`],
  FST_PROTO_VIOLATION: () => [400, 'a multipart field is named __proto__, constructor or prototype; rename it'],
  FST_MP_PREMATURE_CLOSE: () => [400, 'the multipart body ended before its closing boundary; send the whole request'],
  FST_ERR_MAX_PARAM_LENGTH: () => [414, `a path parameter is longer than ${MAX_PARAM_LENGTH} characters (as sent, percent-encoded); ids are at most 256 characters`],
  FST_ERR_BAD_URL: () => [400, 'the request path is not a valid URL (bad percent-encoding); encode path segments as UTF-8'],
};

/** How an app writes its error bodies: ours (decisions.md) or OpenAI's, for the /v1 surface the SDKs parse. */
export type ErrorStyle = 'detail' | 'openai';

/** An error as the handler decided it, before it is written in a style. */
type Outcome =
  | { status: number; detail: string; requestId?: string; code?: string }
  | { status: 422; issues: ValidationIssue[] };

/** The body writer of a style. */
function writerOf(style: ErrorStyle): (outcome: Outcome) => [number, unknown] {
  return style === 'openai' ? openAiBody : detailBody;
}

export function installErrorHandler(app: FastifyInstance, style: ErrorStyle = 'detail'): void {
  const write = writerOf(style);
  const allowed = routeMethods(app);
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    // A request no route serves can still fail before the not-found handler (a QUERY without a content type, a body
    // over the limit): it is answered as what it is, a 404 or 405.
    if (request.is404) return notFound(request, reply);
    const outcome = decide(err, request);
    const [status, body] = write(outcome);
    return reply.code(status).send(body);
  });

  app.setNotFoundHandler((request, reply) => notFound(request, reply));

  function notFound(request: FastifyRequest, reply: FastifyReply) {
    const path = request.url.split('?')[0]!;
    // A known path asked with a method it does not serve is a 405 that says which it does (RFC 9110 §15.5.6).
    const methods = allowed(path);
    if (methods.length > 0) {
      reply.header('allow', methods.join(', '));
      const [status, body] = write({ status: 405, detail: `${request.method} is not served at ${path}; use ${methods.join(', ')}` });
      return reply.code(status).send(body);
    }
    const [status, body] = write({ status: 404, detail: `no endpoint ${request.method} ${path}` });
    return reply.code(status).send(body);
  }
}

/** Fastify's `frameworkErrors`: what the router refuses before any route or hook runs (a path parameter over
 *  MAX_PARAM_LENGTH, a path that is not valid percent-encoding), in the app's error body. */
export function frameworkErrors(style: ErrorStyle = 'detail') {
  const write = writerOf(style);
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const [status, detail] = FASTIFY_CLIENT_ERRORS[err.code]?.(err) ?? [400, err.message];
    const [code, body] = write({ status, detail });
    return reply.header('x-request-id', request.id).code(code).send(body);
  };
}

/** What the HTTP parser gives up on before Fastify sees a request, with the sentence a client can act on. */
function clientErrorOutcome(err: NodeJS.ErrnoException): Outcome {
  switch (err.code) {
    case 'HPE_INVALID_EOF_STATE':
      return { status: 400, detail: 'the request ended before its body was complete (fewer bytes than its Content-Length); send the whole body' };
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, detail: 'the request headers are too large; send fewer or shorter headers' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, detail: 'the request took too long to arrive; send it again' };
    default:
      return { status: 400, detail: `the request is not valid HTTP/1.1 (${err.code ?? err.message}); check how it is sent` };
  }
}

/** Fastify's `clientErrorHandler`: a request the HTTP parser refuses (a body shorter than its Content-Length whose
 *  sender stopped, a malformed header line) is answered in the app's error body, where Fastify's default wrote
 *  {"error":"Bad Request","message":"Client Error"}. A connection already gone is only closed. */
export function clientErrors(style: ErrorStyle = 'detail') {
  const write = writerOf(style);
  return (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, body] = write(clientErrorOutcome(err));
    const text = JSON.stringify(body);
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  };
}

/** The methods each route path serves, learnt as routes are added; returns those of the most specific path template
 *  matching a concrete path (the one with the most literal segments: /datasets/process, not /datasets/{id}). */
function routeMethods(app: FastifyInstance): (path: string) => string[] {
  const routes: Array<{ pattern: RegExp; literals: number; methods: string[] }> = [];
  app.addHook('onRoute', (route) => {
    const segments = route.url.split('/');
    const source = segments
      .map((segment) => (segment === '*' ? '.*' : segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/');
    const literals = segments.filter((segment) => segment !== '*' && !segment.startsWith(':')).length;
    routes.push({ pattern: new RegExp(`^${source}/?$`), literals, methods: ([] as string[]).concat(route.method) });
  });
  return (path) => {
    const matching = routes.filter((r) => r.pattern.test(path));
    const best = Math.max(...matching.map((r) => r.literals));
    return [...new Set(matching.filter((r) => r.literals === best).flatMap((r) => r.methods))].sort();
  };
}

function decide(err: FastifyError, request: FastifyRequest): Outcome {
  if (err instanceof RequestValidationError) {
    return { status: 422, issues: escapeNul(validationDetail(locationOf(err.validationContext), err.issues, err.input)) };
  }
  if (err instanceof UnprocessableEntity) return { status: 422, issues: escapeNul(err.issues) };
  if (err instanceof AppError) {
    if (err.statusCode >= 500) request.log.warn({ err }, 'dependency failure');
    return { status: err.statusCode, detail: err.message, ...(err.code ? { code: err.code } : {}) };
  }
  if (err instanceof BlobNotFound) return { status: 404, detail: 'the stored file behind this resource is missing' };
  if (err instanceof InvalidBlobKey) return { status: 400, detail: err.message };
  const known = err.code ? FASTIFY_CLIENT_ERRORS[err.code] : undefined;
  if (known) {
    const [status, detail] = known(err);
    return { status, detail };
  }
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) return { status: err.statusCode, detail: err.message };
  // busboy (under @fastify/multipart) rejects a body it cannot parse with a bare Error: no code, no status.
  if (request.isMultipart?.() && err.constructor === Error && err.code === undefined) {
    return { status: 400, detail: `the multipart body cannot be read (${err.message}); send multipart/form-data with its boundary and a \`file\` part` };
  }
  request.log.error({ err }, 'unhandled error');
  return { status: 500, detail: 'internal error', requestId: request.id };
}

/** A loc or message may quote a key the client sent; a NUL in it is written escaped (no body of ours holds U+0000). */
function escapeNul(issues: ValidationIssue[]): ValidationIssue[] {
  const escape = <T>(value: T): T => (typeof value === 'string' ? (value.replaceAll('\u0000', '\\u0000') as T) : value);
  return issues.map((issue) => ({ ...issue, loc: issue.loc.map(escape), msg: escape(issue.msg) }));
}

function detailBody(outcome: Outcome): [number, unknown] {
  if ('issues' in outcome) return [422, { detail: outcome.issues }];
  return [outcome.status, outcome.requestId ? { detail: outcome.detail, request_id: outcome.requestId } : { detail: outcome.detail }];
}

const OPENAI_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  404: 'invalid_request_error',
  405: 'invalid_request_error',
  409: 'invalid_request_error',
  413: 'invalid_request_error',
  415: 'invalid_request_error',
  429: 'rate_limit_exceeded',
};
const OPENAI_CODES: Record<number, string> = { 401: 'invalid_api_key', 404: 'not_found', 405: 'method_not_allowed', 409: 'conflict', 413: 'payload_too_large', 503: 'service_unavailable', 504: 'timeout' };

/** An error thrown outside a request (a batch's line on a worker) as the /v1 surface would answer it: its status and
 *  OpenAI's body. AppErrors read as the handler reads them; anything else is a 500 that says what happened. */
export function openAiErrorOf(err: unknown): { status: number; body: { error: { message: string; type: string; param: string | null; code: string | null } } } {
  const outcome: Outcome =
    err instanceof UnprocessableEntity ? { status: 422, issues: escapeNul(err.issues) }
    : err instanceof AppError ? { status: err.statusCode, detail: err.message, ...(err.code ? { code: err.code } : {}) }
    : { status: 500, detail: `internal error: ${err instanceof Error ? err.message : String(err)}` };
  const [status, body] = openAiBody(outcome);
  return { status, body: body as ReturnType<typeof openAiErrorOf>['body'] };
}

/** OpenAI's `{"error": {message, type, param, code}}`. A validation failure is their 400 invalid_request_error with
 *  the first field at fault in `param` (dotted, without the body/query/path prefix). */
function openAiBody(outcome: Outcome): [number, unknown] {
  if ('issues' in outcome) {
    const [first] = outcome.issues;
    const param = first ? first.loc.slice(1).join('.') || null : null;
    const message = outcome.issues.map((issue) => `${issue.loc.slice(1).join('.') || issue.loc[0]}: ${issue.msg}`).join('; ');
    return [400, { error: { message, type: 'invalid_request_error', param, code: first?.type ?? null } }];
  }
  const message = outcome.requestId ? `${outcome.detail} (request id ${outcome.requestId})` : outcome.detail;
  const type = OPENAI_TYPES[outcome.status] ?? (outcome.status >= 500 ? 'server_error' : 'invalid_request_error');
  return [outcome.status, { error: { message, type, param: null, code: outcome.code ?? OPENAI_CODES[outcome.status] ?? null } }];
}
