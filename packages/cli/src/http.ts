// The public HTTP APIs over undici's fetch: the base URL of each service, the bearer key when one is set, how long
// each kind of call may wait, and every non-2xx answer turned into the API's own sentence (errors.ts). Nothing else
// of the services is used.
import { Agent, fetch, type RequestInit, type Response } from 'undici';
import { serviceUrl, ENV_NAMES, FLAG_NAMES, type Service, type Settings } from './config.ts';
import { ApiError, apiErrorMessage, CliError } from './errors.ts';

export type { Response };

/** What a call is, for how long it may wait (CALL_TIMEOUTS). */
export type CallKind = 'lookup' | 'work' | 'stream' | 'transfer';

export interface CallTimeouts {
  /** Milliseconds from sending the request to the answer's headers; 0: no limit. */
  headersTimeout: number;
  /** Milliseconds of silence allowed between two pieces of the body; 0: no limit. */
  bodyTimeout: number;
}

/** Node's fetch gives up on any answer whose headers take 300 s, and on any body silent for 300 s: a synchronous
 *  evaluation, or a job's event stream while a model downloads, outlast both. Where a service has its own limit
 *  (INFERENCE_TIMEOUT_MS answers 504), the command line adds none. */
export const CALL_TIMEOUTS: Record<CallKind, CallTimeouts> = {
  /** Lists, reads, deletes, a cancel, an export's start: the answer comes at once, or the service is stuck. */
  lookup: { headersTimeout: 300_000, bodyTimeout: 300_000 },
  /** Work the service does before it answers (evaluation, processing, a pre-flight, an unstreamed chat answer). */
  work: { headersTimeout: 0, bodyTimeout: 300_000 },
  /** Server-sent events (a job followed, a streamed answer): quiet for as long as the job or the model is. */
  stream: { headersTimeout: 0, bodyTimeout: 0 },
  /** An upload (answered once the whole file is read) or a download (5 minutes without a byte is a broken one). */
  transfer: { headersTimeout: 0, bodyTimeout: 300_000 },
};

export interface RequestOptions {
  json?: unknown;
  body?: RequestInit['body'];
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Default lookup. */
  kind?: CallKind;
}

export class Api {
  /** One connection pool per kind of call, made when first used. */
  private readonly agents = new Map<CallKind, Agent>();

  constructor(
    readonly settings: Settings,
    private readonly timeouts: Record<CallKind, CallTimeouts> = CALL_TIMEOUTS,
  ) {}

  private agent(kind: CallKind): Agent {
    let agent = this.agents.get(kind);
    if (!agent) {
      agent = new Agent(this.timeouts[kind]);
      this.agents.set(kind, agent);
    }
    return agent;
  }

  /** `step` (a fetch, or the reading of a body) with its network failure told as connectionError tells it. */
  private async network<T>(service: Service, kind: CallKind, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      if (isNetworkError(err)) throw connectionError(service, this.settings.urls[service], err, this.timeouts[kind]);
      throw err;
    }
  }

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
    const kind = options.kind ?? 'lookup';
    const init: RequestInit = {
      method,
      dispatcher: this.agent(kind),
      headers: this.headers({ ...(options.json === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers }),
      ...(options.json === undefined ? {} : { body: JSON.stringify(options.json) }),
      ...(options.body === undefined ? {} : { body: options.body }),
      ...(options.signal ? { signal: options.signal } : {}),
    };
    // A streamed body (the upload) goes out as it is read.
    if (options.body instanceof ReadableStream) init.duplex = 'half';
    const res = await this.network(service, kind, () => fetch(url, init));
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
    const text = await this.network(service, options.kind ?? 'lookup', () => res.text());
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
 *  all, the setting that moves it; a call that waited past its limit says which limit. */
export function connectionError(service: Service, url: string, err: unknown, timeouts?: CallTimeouts): CliError {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code ?? (err as { code?: string }).code;
  const unreachable = code ? UNREACHABLE[code] : undefined;
  if (unreachable) {
    return new CliError(`cannot reach the ${service} service at ${url} (${unreachable}); is it running? Set ${ENV_NAMES[service]} (or ${FLAG_NAMES[service]}) to its address`);
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT' && timeouts) {
    return new CliError(`the ${service} service at ${url} sent no answer within ${seconds(timeouts.headersTimeout)}`);
  }
  if (code === 'UND_ERR_BODY_TIMEOUT' && timeouts) {
    return new CliError(`the ${service} service at ${url} stopped sending in the middle of its answer (nothing for ${seconds(timeouts.bodyTimeout)})`);
  }
  return new CliError(`the connection to the ${service} service at ${url} failed: ${cause?.message ?? (err as Error).message}`);
}

function seconds(ms: number): string {
  return `${ms / 1000} s`;
}

/** True for fetch's network failures (as opposed to an HTTP answer or an abort). */
export function isNetworkError(err: unknown): boolean {
  return err instanceof TypeError && (err.message === 'fetch failed' || (err as { cause?: unknown }).cause !== undefined);
}
