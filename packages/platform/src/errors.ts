// Typed errors that routes and domain code throw; the one error handler (http/error-handler.ts) turns
// them into the bodies of spec/decisions.md. Code never builds an error body itself.

export interface ValidationIssue {
  /** Starts with body | path | query | header, then the field path (array indexes as strings). */
  loc: string[];
  msg: string;
  type: string;
}

export abstract class AppError extends Error {
  abstract readonly statusCode: number;
  /** A machine-readable code for clients that read one (OpenAI's `error.code`); most errors have none. */
  readonly code?: string;
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** 400: malformed JSON or a file that cannot be parsed; the message names the line/row and what was expected. */
export class BadRequest extends AppError {
  readonly statusCode = 400;
}

/** 401: missing or invalid credentials where they are required. */
export class Unauthorized extends AppError {
  readonly statusCode = 401;
}

/** 404: unknown id, and any id owned by another user (never 403). */
export class NotFound extends AppError {
  readonly statusCode = 404;
  /** `hint` (what to do instead) follows the sentence. */
  constructor(kind: string, id: string, hint?: string) {
    super(`${kind} ${JSON.stringify(id)} not found${hint ? `: ${hint}` : ''}`);
  }
}

/** 404 for a model id that names nothing the caller can use (OpenAI's clients read code model_not_found). */
export class ModelNotFound extends NotFound {
  override readonly code = 'model_not_found';
  constructor(id: string) {
    super('model', id);
    this.message += '; GET /v1/models lists the base models here and your fine-tuned ones, and a hub model is named owner/name';
  }
}

/** 409: the resource is in a state that forbids the request. */
export class Conflict extends AppError {
  readonly statusCode = 409;
}

/** 413: an upload over MAX_UPLOAD_BYTES. */
export class PayloadTooLarge extends AppError {
  readonly statusCode = 413;
}

/** 422 raised by domain code after schema validation passed (unknown column, split not found, ...). */
export class UnprocessableEntity extends AppError {
  readonly statusCode = 422;
  readonly issues: ValidationIssue[];
  constructor(issues: ValidationIssue | ValidationIssue[]) {
    const list = Array.isArray(issues) ? issues : [issues];
    super(list.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '));
    this.issues = list;
  }
}

/** 503: a dependency (database, queue, storage, hub) is down; the message says which. */
export class ServiceUnavailable extends AppError {
  readonly statusCode = 503;
  constructor(readonly dependency: string, message: string) {
    super(message);
  }
}

/** 504: a job the request waits on did not finish within its time limit. */
export class GatewayTimeout extends AppError {
  readonly statusCode = 504;
}

/** 499 (nginx's "client closed request"): the client went away before its answer was sent. Nobody reads it; it is
 *  the reason work done for that request is cancelled (http/request-lifetime.ts). */
export class ClientClosedRequest extends AppError {
  readonly statusCode = 499;
}

/** Shorthand for the common one-field 422. */
export function invalidField(loc: string[], msg: string, type = 'value_error'): UnprocessableEntity {
  return new UnprocessableEntity({ loc, msg, type });
}

/** Node's network error codes that mean a server cannot be reached (the database, the storage, Redis). */
const NETWORK_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ECONNABORTED']);

/** True when `code` (an error's `code`) is one of Node's "cannot reach the server" codes. */
export function isNetworkErrorCode(code: unknown): boolean {
  return typeof code === 'string' && NETWORK_ERROR_CODES.has(code);
}
