// An API client for tests that drive running processes over HTTP: JSON in and out with the caller's auth
// header, a 200-or-throw variant, and polling until a condition holds (with the last value in the failure).

export type CallInit = RequestInit & { json?: unknown };

export interface ApiClient {
  call(url: string, init?: CallInit): Promise<{ status: number; body: any }>;
  ok(url: string, init?: CallInit): Promise<any>;
}

/** `auth()` is read at each call, so a test can set its key after making the client. */
export function apiClient(auth: () => Record<string, string>): ApiClient {
  const call = async (url: string, init: CallInit = {}) => {
    const { json, ...rest } = init;
    const res = await fetch(url, {
      ...rest,
      headers: { ...auth(), ...(json === undefined ? {} : { 'content-type': 'application/json' }), ...(rest.headers as Record<string, string> | undefined) },
      ...(json === undefined ? {} : { body: JSON.stringify(json) }),
    });
    const text = await res.text();
    return { status: res.status, body: text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text };
  };
  return {
    call,
    async ok(url, init = {}) {
      const res = await call(url, init);
      if (res.status !== 200) throw new Error(`${init.method ?? 'GET'} ${url} → ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body;
    },
  };
}

export async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 300_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not there within ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
