// The public HTTP APIs over fetch: the base URL of each service, the bearer key when one is set, and every
// non-2xx answer turned into the API's own sentence (errors.ts). Nothing else of the services is used.
import { serviceUrl, ENV_NAMES, FLAG_NAMES, type Service, type Settings } from './config.ts';
import { ApiError, apiErrorMessage, CliError } from './errors.ts';

export interface RequestOptions {
  json?: unknown;
  body?: RequestInit['body'];
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export class Api {
  constructor(readonly settings: Settings) {}

  /** `path` is joined as given: callers encode their path parameters with `segment`. */
  url(service: Service, path: string): string {
    return `${serviceUrl(this.settings, service)}${path}`;
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { ...(this.settings.apiKey ? { authorization: `Bearer ${this.settings.apiKey}` } : {}), ...extra };
  }

  /** The response of a 2xx answer; anything else throws (ApiError with the API's sentence, or a connection error). */
  async send(service: Service, method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const url = this.url(service, path);
    const init: RequestInit & { duplex?: 'half' } = {
      method,
      headers: this.headers({ ...(options.json === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers }),
      ...(options.json === undefined ? {} : { body: JSON.stringify(options.json) }),
      ...(options.body === undefined ? {} : { body: options.body }),
      ...(options.signal ? { signal: options.signal } : {}),
    };
    // A streamed body (the upload) goes out as it is read.
    if (options.body instanceof ReadableStream) init.duplex = 'half';
    let res: Response;
    try {
      res = await fetch(url, init);
    } catch (err) {
      if (isNetworkError(err)) throw connectionError(service, this.settings.urls[service], err);
      throw err;
    }
    if (!res.ok) {
      const text = await res.text().catch(() => '');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: the text is the body
      }
      let message = apiErrorMessage(res.status, res.statusText, body);
      if (res.status === 401) message += ` (the API key comes from ${FLAG_NAMES.apiKey}, ${ENV_NAMES.apiKey} or ${this.settings.configFile})`;
      throw new ApiError(res.status, body, message);
    }
    return res;
  }

  async json<T>(service: Service, method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const res = await this.send(service, method, path, options);
    const text = await res.text();
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new CliError(`the ${service} service answered ${method} ${path} with something that is not JSON: ${text.slice(0, 200)}`);
    }
  }
}

/** A path parameter, encoded. */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

// Failures before any connection was made: the service is not where the settings say.
const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connect timed out',
};

/** fetch's "fetch failed" as a sentence that names the service and its URL, and when it could not be reached at
 *  all, the setting that moves it. */
export function connectionError(service: Service, url: string, err: unknown): CliError {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code ?? (err as { code?: string }).code;
  const unreachable = code ? UNREACHABLE[code] : undefined;
  if (unreachable) {
    return new CliError(`cannot reach the ${service} service at ${url} (${unreachable}); is it running? Set ${ENV_NAMES[service]} (or ${FLAG_NAMES[service]}) to its address`);
  }
  return new CliError(`the connection to the ${service} service at ${url} failed: ${cause?.message ?? (err as Error).message}`);
}

/** True for fetch's network failures (as opposed to an HTTP answer or an abort). */
export function isNetworkError(err: unknown): boolean {
  return err instanceof TypeError && (err.message === 'fetch failed' || (err as { cause?: unknown }).cause !== undefined);
}
