// What a command can fail with, and the exit code each gives: 1 for an API or connection failure (and a job that
// failed), 2 for a usage error (bad flags, a bad config file), as commander's own usage errors do here.
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
    this.name = 'CliError';
  }
}

export class UsageError extends CliError {
  constructor(message: string) {
    super(message, 2);
    this.name = 'UsageError';
  }
}

/** A non-2xx answer: `message` is the API's own sentence (one line per 422 entry, `loc: msg`). */
export class ApiError extends CliError {
  constructor(readonly status: number, readonly body: unknown, message: string) {
    super(message, 1);
    this.name = 'ApiError';
  }
}

interface ValidationEntry {
  loc?: unknown;
  msg?: unknown;
}

/** The sentence(s) an error body carries: 422 `detail` entries as `loc: msg`, else `detail`, else OpenAI's
 *  `error.message`, else the HTTP status. */
export function apiErrorMessage(status: number, statusText: string, body: unknown): string {
  if (typeof body === 'object' && body !== null) {
    const { detail, error, request_id: requestId } = body as { detail?: unknown; error?: { message?: unknown }; request_id?: unknown };
    if (Array.isArray(detail) && detail.length > 0) {
      return detail
        .map((entry: ValidationEntry) => {
          const loc = Array.isArray(entry.loc) ? entry.loc.map(String).join('.') : '';
          const msg = typeof entry.msg === 'string' ? entry.msg : JSON.stringify(entry);
          return loc ? `${loc}: ${msg}` : msg;
        })
        .join('\n');
    }
    if (typeof detail === 'string' && detail) return typeof requestId === 'string' ? `${detail} (request_id ${requestId})` : detail;
    if (error && typeof error.message === 'string' && error.message) return error.message;
  }
  if (typeof body === 'string' && body.trim() && body.length < 500 && !body.trimStart().startsWith('<')) return body.trim();
  return `HTTP ${status}${statusText ? ` ${statusText}` : ''}`;
}
