// Publishing files to a model-hub repository through @huggingface/hub: create the repo when it does not
// exist, then one commit with every file (small files inline, large ones through LFS). Failures become a
// HubPublishError whose message says what to do; the token goes in a header only, never into a message.
import fs from 'node:fs';
import { commit, createRepo, HubApiError } from '@huggingface/hub';

export interface HubTarget {
  /** HF_ENDPOINT, without a trailing slash. */
  endpoint: string;
  token: string;
  /** owner/name */
  repoId: string;
  /** Limit for each API call to answer; LFS uploads of large files have none. */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface HubFile {
  /** Path inside the repository. */
  path: string;
  /** Local file. */
  file: string;
}

export class HubPublishError extends Error {
  override readonly name = 'HubPublishError';
}

/** The repository's URL, as recorded in artifacts. */
export function hubRepoUrl(endpoint: string, repoId: string): string {
  return `${endpoint.replace(/\/$/, '')}/${repoId}`;
}

/** Creates `repoId` when missing and commits `files` to its main branch in one commit; returns the repo URL. */
export async function publishToHub(target: HubTarget, files: HubFile[], title: string): Promise<string> {
  const endpoint = target.endpoint.replace(/\/$/, '');
  const fetch = hubFetch(target, endpoint);
  const repo = { type: 'model' as const, name: target.repoId };
  try {
    try {
      // No accessToken here: the library refuses tokens without the `hf_` prefix (mirrors and stand-ins use
      // others); hubFetch sets the header. The cast covers the credentials the type asks for.
      await createRepo({ repo, hubUrl: endpoint, fetch } as Parameters<typeof createRepo>[0]);
    } catch (err) {
      if (!(err instanceof HubApiError && err.statusCode === 409)) throw err; // 409: it exists already
    }
    const operations = await Promise.all(
      files.map(async (f) => ({ operation: 'addOrUpdate' as const, path: f.path, content: await fs.openAsBlob(f.file) })),
    );
    await commit({ repo, operations, title, hubUrl: endpoint, fetch, useXet: false, ...(target.signal ? { abortSignal: target.signal } : {}) });
  } catch (err) {
    throw describeHubFailure(target, endpoint, err);
  }
  return hubRepoUrl(endpoint, target.repoId);
}

/**
 * fetch with the token on requests to the hub itself (never on the LFS storage URLs it hands out, which
 * carry their own signature) and a time limit on API calls.
 */
function hubFetch(target: HubTarget, endpoint: string): typeof fetch {
  const origin = new URL(endpoint).origin;
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers = new Headers(init?.headers);
    if (url.origin === origin) headers.set('Authorization', `Bearer ${target.token}`);
    else headers.delete('Authorization');
    const limits = [init?.signal, target.signal, init?.method === 'PUT' ? undefined : AbortSignal.timeout(target.timeoutMs)]
      .filter((s): s is AbortSignal => Boolean(s));
    return fetch(input, { ...init, headers, signal: AbortSignal.any(limits) });
  };
}

function describeHubFailure(target: HubTarget, endpoint: string, err: unknown): HubPublishError {
  const where = `the model hub at ${endpoint}`;
  const repo = target.repoId;
  if (err instanceof HubApiError) {
    const said = hubSaid(err);
    if (err.statusCode === 401) return new HubPublishError(`${where} refused the hub_token (HTTP 401${said}); check that the token is valid and export again`);
    if (err.statusCode === 403) return new HubPublishError(`${where} did not allow writing to ${repo} with this hub_token (HTTP 403${said}); use a token with write access to ${repo}`);
    if (err.statusCode === 429 || err.statusCode >= 500) return new HubPublishError(`${where} answered HTTP ${err.statusCode}${said}; try the export again later`);
    return new HubPublishError(`${where} rejected the upload to ${repo} (HTTP ${err.statusCode}${said})`);
  }
  const error = err instanceof Error ? err : new Error(String(err));
  if (target.signal?.aborted) return new HubPublishError(`the upload to ${where} was stopped`);
  if (error.name === 'TimeoutError') return new HubPublishError(`${where} did not answer within ${target.timeoutMs} ms; check HF_ENDPOINT or the network and export again`);
  const cause = error.cause as { code?: string; message?: string } | undefined;
  if (error instanceof TypeError && cause) {
    return new HubPublishError(`${where} is unreachable (${cause.message ?? cause.code}); check HF_ENDPOINT or the network and export again`);
  }
  return new HubPublishError(`publishing to ${repo} on ${where} failed: ${error.message}`);
}

/** The hub's own explanation from its JSON error body, without the request URL the library appends. */
function hubSaid(err: HubApiError): string {
  const data = err.data as { error?: unknown; message?: unknown } | undefined;
  const text = typeof data?.error === 'string' ? data.error : typeof data?.message === 'string' ? data.message : '';
  return text ? `: ${text.slice(0, 200)}` : '';
}
