// The model hub calls of the hub dataset source (revision info, file listing) and the one place that turns
// network failures and hub status codes into the platform's typed errors (503 hub, 404 dataset).
import { datasetInfo, HubApiError, listFiles } from '@huggingface/hub';
import { AppError, NotFound, ServiceUnavailable } from '@ftp/platform';

export interface HubConnection {
  /** Base URL without a trailing slash (HF_ENDPOINT). */
  endpoint: string;
  /** Sent as a bearer token, never logged or put in a message. */
  token?: string;
  /** Limit for a request to start answering, and for a download to go quiet. */
  timeoutMs: number;
  fetch: typeof fetch;
}

/** A README `configs` entry, as the hub parses it into `cardData`. */
export interface CardConfig {
  config_name: string;
  data_files?: string | string[] | Array<{ split: string; path: string | string[] }>;
  data_dir?: string;
  /** Marks the subset loaded when none is named. */
  default?: boolean;
}

export interface RevisionInfo {
  /** The commit the revision points at; every later request uses it, so all reads see one commit. */
  sha: string;
  configs?: CardConfig[];
}

export interface HubFileEntry {
  path: string;
  size: number;
}

/**
 * fetch with the token and a time limit on the answer. The token goes in as a header here rather than as
 * the library's `accessToken`, which rejects tokens not starting with `hf_` (mirrors and the stand-in
 * use others) with a TypeError.
 */
export function hubFetch(conn: HubConnection): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    if (conn.token) headers.set('Authorization', `Bearer ${conn.token}`);
    try {
      return await conn.fetch(input, { ...init, headers, signal: init?.signal ?? AbortSignal.timeout(conn.timeoutMs) });
    } catch (err) {
      throw hubUnreachable(conn, err);
    }
  };
}

/** Revision info, or null when the hub says the repo or revision does not exist (or is not visible). */
export async function fetchRevisionInfo(conn: HubConnection, repoId: string, revision: string): Promise<RevisionInfo | null> {
  try {
    const info = await datasetInfo({
      name: repoId,
      revision,
      hubUrl: conn.endpoint,
      additionalFields: ['sha', 'cardData'],
      fetch: hubFetch(conn),
    });
    const configs = info.cardData?.configs as CardConfig[] | undefined;
    return configs?.length ? { sha: info.sha, configs } : { sha: info.sha };
  } catch (err) {
    if (err instanceof HubApiError && [401, 403, 404].includes(err.statusCode)) return null;
    throw toHubError(conn, err);
  }
}

/** Every file of the revision, all pages. */
export async function listRepoFiles(conn: HubConnection, repoId: string, sha: string): Promise<HubFileEntry[]> {
  const files: HubFileEntry[] = [];
  try {
    const entries = listFiles({
      repo: { type: 'dataset', name: repoId },
      revision: sha,
      recursive: true,
      hubUrl: conn.endpoint,
      fetch: hubFetch(conn),
    });
    for await (const entry of entries) {
      if (entry.type === 'file') files.push({ path: entry.path, size: entry.size });
    }
  } catch (err) {
    throw toHubError(conn, err);
  }
  return files;
}

/** The 404 for a dataset the hub does not show us: absent, private or gated without access alike. */
export function hubDatasetNotFound(repoId: string, revision: string | undefined): NotFound {
  const error = new NotFound('hub dataset', repoId);
  const rev = revision ? ` and the revision ${JSON.stringify(revision)}` : '';
  error.message += `; check the dataset id${rev}, and for a private or gated dataset that the hub token has access to it`;
  return error;
}

export function hubUnreachable(conn: HubConnection, err: unknown): ServiceUnavailable {
  if (err instanceof ServiceUnavailable) return err;
  return new ServiceUnavailable(
    'hub',
    `the model hub at ${conn.endpoint} is unreachable: ${networkReason(conn, err)}; check HF_ENDPOINT or the network`,
  );
}

/** Maps an error from a hub call: our own errors pass, hub outages become 503, anything else is a bug. */
export function toHubError(conn: HubConnection, err: unknown): Error {
  if (err instanceof AppError) return err;
  if (err instanceof HubApiError) {
    if (err.statusCode === 429 || err.statusCode >= 500) {
      return new ServiceUnavailable('hub', `the model hub at ${conn.endpoint} answered ${err.statusCode}; try again later`);
    }
    return err;
  }
  if (isNetworkError(err)) return hubUnreachable(conn, err);
  return err instanceof Error ? err : new Error(String(err));
}

function isNetworkError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  // undici reports connection problems as TypeError('fetch failed') with the socket error as cause.
  return err.name === 'TimeoutError' || err.name === 'AbortError' || (err instanceof TypeError && err.cause !== undefined);
}

function networkReason(conn: HubConnection, err: unknown): string {
  if (err instanceof Error && err.name === 'TimeoutError') return `no answer within ${conn.timeoutMs} ms`;
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string } | undefined) : undefined;
  // e.g. "connect ECONNREFUSED 127.0.0.1:9" or "getaddrinfo ENOTFOUND hub.example".
  if (cause?.code) return cause.message ?? cause.code;
  return err instanceof Error ? err.message : String(err);
}
