// The hub stand-in's repo endpoints: `/api/{datasets|models}/{id}/revision|tree|paths-info/{rev}/…` and
// `/{datasets/}{id}/resolve|raw/{rev}/{path}`, answered from the in-memory HubStore.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendError, sendFile, sendJson } from './responses.ts';
import { treeEntry, type HubStore, type RepoType, type StoredRepo, type StoredRevision } from './store.ts';

export interface RepoRouteOptions {
  store: HubStore;
  token: string | undefined;
  pageSize: number;
}

interface RepoRequest {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  repo: StoredRepo;
  revision: StoredRevision;
  /** The file or folder path after the revision, decoded. */
  path: string;
}

const API_ACTIONS = new Set(['revision', 'tree', 'paths-info']);
const FILE_ACTIONS = new Set(['resolve', 'raw']);

/** Answers a repo request; false when the URL is not one of the repo endpoints. */
export async function handleRepoRequest(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  options: RepoRouteOptions,
): Promise<boolean> {
  const route = parseRepoRoute(url.pathname.split('/').slice(1));
  if (!route) return false;
  const repo = options.store.repo(route.type, route.id);
  const denied = checkAccess(req, repo, options.token);
  if (denied) return sendError(res, denied.status, 'RepoNotFound', denied.message), true;
  if (!repo) return sendError(res, 404, 'RepoNotFound', 'Repository not found'), true;

  const { ref, rest } = splitRevision(repo, route.rest);
  const revision = ref === undefined ? undefined : options.store.revision(repo, ref);
  if (!revision) return sendError(res, 404, 'RevisionNotFound', `Invalid rev id: ${ref ?? ''}`), true;

  const call: RepoRequest = { req, res, url, repo, revision, path: rest.join('/') };
  const method = req.method ?? 'GET';
  if (route.action === 'revision' && method === 'GET') sendJson(res, 200, repoInfo(repo, revision));
  else if (route.action === 'tree' && method === 'GET') sendTree(call, options);
  else if (route.action === 'paths-info' && method === 'POST') await sendPathsInfo(call);
  else if (FILE_ACTIONS.has(route.action) && (method === 'GET' || method === 'HEAD')) sendRepoFile(call, route.action);
  else sendError(res, 405, undefined, `${method} not allowed on ${url.pathname}`);
  return true;
}

interface RepoRoute {
  type: RepoType;
  id: string;
  action: string;
  rest: string[];
}

/**
 * API routes: `api/{datasets|models}/{id}/{action}/…`; file routes: `datasets/{id}/{action}/…` for
 * datasets and `{id}/{action}/…` for models, whose id may lack an owner (`gpt2`).
 */
function parseRepoRoute(segments: string[]): RepoRoute | undefined {
  const isApi = segments[0] === 'api';
  let parts = isApi ? segments.slice(1) : segments;
  let type: RepoType = 'model';
  if (parts[0] === 'datasets' || (isApi && parts[0] === 'models')) {
    type = parts[0] === 'datasets' ? 'dataset' : 'model';
    parts = parts.slice(1);
  } else if (isApi) {
    return undefined;
  }
  const actions = isApi ? API_ACTIONS : FILE_ACTIONS;
  const at = actions.has(parts[2] ?? '') ? 2 : type === 'model' && actions.has(parts[1] ?? '') ? 1 : -1;
  const action = parts[at];
  if (action === undefined) return undefined;
  return { type, id: parts.slice(0, at).map(decodeURIComponent).join('/'), action, rest: parts.slice(at + 1) };
}

/**
 * The revision is one encoded segment (`refs%2Fconvert%2Fparquet`, a branch or a sha) or, as the hub
 * also accepts, raw segments naming a known branch (`refs/convert/parquet`); the longest known one wins.
 */
function splitRevision(repo: StoredRepo, rest: string[]): { ref?: string; rest: string[] } {
  for (let n = rest.length; n > 1; n--) {
    const candidate = rest.slice(0, n).map(decodeURIComponent).join('/');
    if (repo.revisions.has(candidate)) return { ref: candidate, rest: rest.slice(n).map(decodeURIComponent) };
  }
  const [first, ...others] = rest;
  return { ref: first === undefined ? undefined : decodeURIComponent(first), rest: others.map(decodeURIComponent) };
}

/** Like the hub: an unknown or private repo reads as 401 without credentials and 404 with them. */
function checkAccess(req: IncomingMessage, repo: StoredRepo | undefined, token: string | undefined) {
  const auth = req.headers.authorization;
  if (token && auth && auth !== `Bearer ${token}`) {
    return { status: 401, message: 'Invalid credentials in Authorization header' };
  }
  if ((!repo || token) && !auth) return { status: 401, message: 'Invalid username or password.' };
  return undefined;
}

function repoInfo(repo: StoredRepo, revision: StoredRevision): Record<string, unknown> {
  return {
    // The hub's Mongo-style object id; stable per repo is all a client can rely on.
    _id: Buffer.from(`${repo.type}/${repo.id}`).toString('hex').slice(0, 24).padEnd(24, '0'),
    id: repo.id,
    ...(repo.type === 'model' ? { modelId: repo.id } : {}),
    author: repo.id.includes('/') ? repo.id.split('/')[0] : undefined,
    sha: revision.sha,
    private: false,
    gated: false,
    disabled: false,
    downloads: 0,
    likes: 0,
    tags: [],
    lastModified: repo.createdAt,
    createdAt: repo.createdAt,
    ...(repo.cardData ? { cardData: repo.cardData } : {}),
    siblings: [...revision.files.keys()].map((rfilename) => ({ rfilename })),
  };
}

function sendTree({ res, url, revision, path }: RepoRequest, { store, pageSize }: RepoRouteOptions): void {
  const entries = store.tree(revision, path, url.searchParams.get('recursive') === 'true');
  if (!entries) return sendError(res, 404, 'EntryNotFound', `Path ${path} not found in ${revision.name}`);
  const offset = Number(url.searchParams.get('cursor') ?? 0);
  if (offset + pageSize < entries.length) {
    // Absolute URL and a space after ';': @huggingface/hub's parseLinkHeader accepts only that form.
    const next = new URL(url.href);
    next.searchParams.set('cursor', String(offset + pageSize));
    res.setHeader('Link', `<${next.href}>; rel="next"`);
  }
  sendJson(res, 200, entries.slice(offset, offset + pageSize));
}

async function sendPathsInfo({ req, res, repo, revision }: RepoRequest): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { paths?: string[]; expand?: boolean };
  const lastCommit = { id: revision.sha, title: 'Upload', date: repo.createdAt };
  const found = (body.paths ?? []).flatMap((p) => {
    const file = revision.files.get(p);
    if (!file) return [];
    return [body.expand ? { ...treeEntry(file), lastCommit } : treeEntry(file)];
  });
  sendJson(res, 200, found);
}

function sendRepoFile({ req, res, url, revision, path }: RepoRequest, action: string): void {
  const file = revision.files.get(path);
  if (!file) return sendError(res, 404, 'EntryNotFound', `${path} does not exist on "${revision.name}"`);
  res.setHeader('X-Repo-Commit', revision.sha);
  if (file.lfs && action === 'resolve') {
    // The hub answers LFS files with a redirect to its CDN, carrying the real size and ETag.
    res.setHeader('X-Linked-Size', String(file.content.length));
    res.setHeader('X-Linked-ETag', `"${file.lfs.sha256}"`);
    res.setHeader('ETag', `"${file.lfs.sha256}"`);
    res.setHeader('Location', `${url.origin}/cdn-lfs/${file.lfs.sha256}`);
    res.statusCode = 302;
    return void res.end();
  }
  sendFile(req, res, file.content, { etag: file.oid });
}
