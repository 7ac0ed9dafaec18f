// How the console talks to the services: through its own origin (/api/<service>/…, forwarded by the console's
// server), with the API key of this browser session in the Authorization header (never in a URL), and with every
// failure turned into the sentence the API returned.
import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';

export type Service = 'preprocessing' | 'training' | 'export' | 'inference' | 'openai';
export type { EventSourceMessage };

const KEY_NAME = 'ftp-console-api-key';

/** The API key, kept for this browser tab's session only (sessionStorage): closing the tab forgets it. */
export const apiKey = {
  get: (): string | null => sessionStorage.getItem(KEY_NAME),
  set: (key: string): void => sessionStorage.setItem(KEY_NAME, key),
  clear: (): void => sessionStorage.removeItem(KEY_NAME),
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Called when a service answers 401: the key is missing, wrong or revoked (the app shows the login box). */
let onUnauthorized: (message: string) => void = () => {};
export function setUnauthorizedHandler(handler: (message: string) => void): void {
  onUnauthorized = handler;
}

interface ValidationIssue {
  loc?: unknown[];
  msg?: string;
}

/** The sentence an error body carries: each 422 issue's msg (after the field it is about), `detail`, or the
 *  /v1 surface's `error.message`; the status line when the body says nothing. */
export function errorSentence(status: number, body: unknown): string {
  if (body && typeof body === 'object') {
    const { detail, error, message } = body as { detail?: unknown; error?: { message?: unknown }; message?: unknown };
    if (Array.isArray(detail)) {
      return (detail as ValidationIssue[])
        .map((issue) => {
          const field = (issue.loc ?? []).slice(1).join('.');
          return field && !String(issue.msg).includes(field) ? `${field}: ${issue.msg}` : String(issue.msg);
        })
        .join('; ');
    }
    if (typeof detail === 'string') return detail;
    if (typeof error?.message === 'string') return error.message;
    if (typeof message === 'string') return message;
  }
  if (typeof body === 'string' && body.trim()) return body.trim().slice(0, 300);
  return `the request failed with HTTP ${status}`;
}

function headers(extra?: HeadersInit): Headers {
  const all = new Headers(extra);
  const key = apiKey.get();
  if (key) all.set('authorization', `Bearer ${key}`);
  return all;
}

async function failure(response: Response): Promise<ApiError> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the text itself
  }
  const error = new ApiError(response.status, errorSentence(response.status, body));
  if (response.status === 401) onUnauthorized(error.message);
  return error;
}

export interface RequestOptions {
  method?: string;
  json?: unknown;
  signal?: AbortSignal;
  headers?: HeadersInit;
}

/** A request to a service; resolves with the response when it is 2xx, else rejects with the API's sentence. */
export function request(service: Service, path: string, options: RequestOptions = {}): Promise<Response> {
  return send(`/api/${service}${path}`, options);
}

/** A request to the console's own origin (`url`), with the key. */
async function send(url: string, options: RequestOptions): Promise<Response> {
  const init: RequestInit = { method: options.method ?? (options.json === undefined ? 'GET' : 'POST'), headers: headers(options.headers), signal: options.signal ?? null };
  if (options.json !== undefined) {
    (init.headers as Headers).set('content-type', 'application/json');
    init.body = JSON.stringify(options.json);
  }
  let response: Response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, `the console cannot be reached (${(err as Error).message}); is it still running?`);
  }
  if (!response.ok) throw await failure(response);
  return response;
}

/** A JSON request; resolves with the parsed body. */
export async function api<T>(service: Service, path: string, options: RequestOptions = {}): Promise<T> {
  return (await (await request(service, path, options)).json()) as T;
}

/** Uploads a file as multipart `file`, reporting the share sent (0–1). XHR, because fetch reports no upload progress. */
export function uploadWithProgress<T>(
  service: Service,
  path: string,
  file: File,
  onProgress: (fraction: number) => void,
  fields: Record<string, string> = {},
): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `/api/${service}${path}`);
    const key = apiKey.get();
    if (key) xhr.setRequestHeader('authorization', `Bearer ${key}`);
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    };
    xhr.onload = () => {
      let body: unknown = xhr.responseText;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        // not JSON
      }
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(1);
        resolve(body as T);
        return;
      }
      const error = new ApiError(xhr.status, errorSentence(xhr.status, body));
      if (xhr.status === 401) onUnauthorized(error.message);
      reject(error);
    };
    xhr.onerror = () => reject(new ApiError(0, 'the upload was interrupted: the console could not be reached'));
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    form.append('file', file, file.name);
    xhr.send(form);
  });
}

/** Server-sent events of a GET (a job's events) or a POST (a streamed chat completion), read over fetch so the
 *  Authorization header goes with them (EventSource cannot send one). Ends when the server closes the stream.
 *  `onComment` gets its comment lines (a chat's `preparing: …` news while a model's first use waits). */
export async function* serverSentEvents(service: Service, path: string, options: RequestOptions = {}, onComment?: (comment: string) => void): AsyncGenerator<EventSourceMessage> {
  const response = await request(service, path, { ...options, headers: { accept: 'text/event-stream', ...options.headers } });
  const parser = new EventSourceParserStream(onComment ? { onComment: (comment) => onComment(comment.trim()) } : {});
  const reader = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(parser).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/** Downloads a file of a service straight to disk, never into the page's memory (an export can be gigabytes). A link
 *  cannot carry the key, so the console is asked first, with it: it opens the file and answers a one-time link
 *  (valid for seconds) that the browser then saves as it streams in. A refusal is the service's sentence. */
export async function downloadFile(service: Service, path: string): Promise<void> {
  const { url } = (await (await send('/downloads', { json: { service, path } })).json()) as { url: string };
  const link = document.createElement('a');
  link.href = url;
  // Empty: the name the service gives in Content-Disposition.
  link.setAttribute('download', '');
  document.body.append(link);
  link.click();
  link.remove();
}
