// The hub stand-in's write endpoints, as @huggingface/hub's createRepo and commit call them (xet off):
// `POST /api/repos/create`, `POST /api/{models|datasets}/{id}/preupload/{rev}`, the git-LFS batch endpoint
// `POST /{datasets/}{id}.git/info/lfs/objects/batch` with its basic-transfer upload URLs (`PUT /lfs-upload/{oid}`),
// and `POST /api/{models|datasets}/{id}/commit/{rev}` (NDJSON). What they receive lands in the HubStore, so the
// read routes serve it back. Writes always need a bearer token (the configured one when set).
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendError, sendJson } from './responses.ts';
import { isLfsFile, type HubStore, type RepoFiles, type RepoType, type StoredRepo } from './store.ts';

export interface WriteRouteOptions {
  store: HubStore;
  token: string | undefined;
}

const GITATTRIBUTES = '*.safetensors filter=lfs diff=lfs merge=lfs -text\n*.gguf filter=lfs diff=lfs merge=lfs -text\n*.gz filter=lfs diff=lfs merge=lfs -text\n';

/** Answers a write request; false when the URL is not one of the write endpoints. */
export async function handleWriteRequest(req: IncomingMessage, res: ServerResponse, url: URL, options: WriteRouteOptions): Promise<boolean> {
  const segments = url.pathname.split('/').slice(1).map(decodeURIComponent);
  const method = req.method ?? 'GET';
  const lfsUpload = segments[0] === 'lfs-upload' && segments.length === 2 && method === 'PUT';
  const create = url.pathname === '/api/repos/create' && method === 'POST';
  const batch = /^\/(datasets\/)?(.+)\.git\/info\/lfs\/objects\/batch$/.exec(url.pathname);
  const api = segments[0] === 'api' && (segments[1] === 'models' || segments[1] === 'datasets') ? apiWriteRoute(segments) : undefined;
  if (!lfsUpload && !create && !(batch && method === 'POST') && !(api && method === 'POST')) return false;

  // Uploads go to storage URLs that carry their own authority, as the hub's presigned ones do.
  if (lfsUpload) return receiveLfsObject(req, res, options.store, segments[1]!), true;
  const denied = checkWriter(req, options.token);
  if (denied) return sendError(res, 401, undefined, denied), true;
  const body = await readBody(req);
  if (create) return createRepo(res, url, options.store, JSON.parse(body.toString('utf8')) as CreateRepoBody), true;

  const type: RepoType = batch ? (batch[1] ? 'dataset' : 'model') : api!.type;
  const id = batch ? decodeURIComponent(batch[2]!) : api!.id;
  const repo = options.store.repo(type, id);
  if (!repo) return sendError(res, 404, 'RepoNotFound', `Repository not found: ${id}`), true;
  if (batch) sendLfsBatch(res, url, options.store, JSON.parse(body.toString('utf8')) as LfsBatchBody);
  else if (api!.action === 'preupload') sendPreupload(res, JSON.parse(body.toString('utf8')) as PreuploadBody);
  else commit(res, url, options.store, repo, api!.revision, body);
  return true;
}

interface ApiWriteRoute {
  type: RepoType;
  id: string;
  action: 'preupload' | 'commit';
  revision: string;
}

/** `api/{models|datasets}/{id}/{preupload|commit}/{rev}`, the id with or without an owner. */
function apiWriteRoute(segments: string[]): ApiWriteRoute | undefined {
  const type: RepoType = segments[1] === 'datasets' ? 'dataset' : 'model';
  const parts = segments.slice(2);
  for (const at of [2, 1]) {
    const action = parts[at];
    if ((action === 'preupload' || action === 'commit') && parts.length === at + 2) {
      return { type, id: parts.slice(0, at).join('/'), action, revision: parts[at + 1]! };
    }
  }
  return undefined;
}

function checkWriter(req: IncomingMessage, token: string | undefined): string | undefined {
  const auth = req.headers.authorization;
  if (!auth || !/^Bearer \S+$/.test(auth)) return 'Invalid username or password.';
  if (token && auth !== `Bearer ${token}`) return 'Invalid credentials in Authorization header';
  return undefined;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

interface CreateRepoBody {
  name: string;
  organization?: string;
  type?: string;
}

function createRepo(res: ServerResponse, url: URL, store: HubStore, body: CreateRepoBody): void {
  const type = body.type ?? 'model';
  if (type !== 'model' && type !== 'dataset') return sendError(res, 400, undefined, `the stand-in has no ${type} repos`);
  const id = body.organization ? `${body.organization}/${body.name}` : body.name;
  const repoUrl = `${url.origin}/${type === 'dataset' ? 'datasets/' : ''}${id}`;
  if (store.repo(type, id)) return sendJson(res, 409, { error: `You already created this ${type} repo`, url: repoUrl });
  // Like the hub, a new repo starts with one commit holding .gitattributes.
  store.setRepo(type, id, { main: { '.gitattributes': GITATTRIBUTES } });
  sendJson(res, 200, { url: repoUrl, name: id, id: createHash('sha1').update(`${type}/${id}`).digest('hex').slice(0, 24) });
}

interface PreuploadBody {
  files: Array<{ path: string; size: number; sample: string }>;
}

function sendPreupload(res: ServerResponse, body: PreuploadBody): void {
  sendJson(res, 200, {
    files: body.files.map((f) => ({ path: f.path, uploadMode: isLfsFile(f.path, f.size) ? 'lfs' : 'regular', shouldIgnore: false })),
  });
}

interface LfsBatchBody {
  operation: string;
  transfers?: string[];
  objects: Array<{ oid: string; size: number }>;
}

/** Basic transfer only (the stand-in speaks no xet): an upload URL per object it does not hold yet. */
function sendLfsBatch(res: ServerResponse, url: URL, store: HubStore, body: LfsBatchBody): void {
  if (body.operation !== 'upload') return sendError(res, 400, undefined, 'the stand-in accepts LFS uploads only');
  const objects = body.objects.map(({ oid, size }) => ({
    oid,
    size,
    authenticated: true,
    ...(store.lfsObjects.has(oid) ? {} : { actions: { upload: { href: `${url.origin}/lfs-upload/${oid}`, expires_in: 3600 } } }),
  }));
  res.setHeader('Content-Type', 'application/vnd.git-lfs+json');
  res.statusCode = 200;
  res.end(JSON.stringify({ transfer: 'basic', objects }));
}

async function receiveLfsObject(req: IncomingMessage, res: ServerResponse, store: HubStore, oid: string): Promise<void> {
  const content = await readBody(req);
  const actual = createHash('sha256').update(content).digest('hex');
  if (actual !== oid) return sendError(res, 400, undefined, `the uploaded bytes hash to ${actual}, not ${oid}`);
  store.lfsObjects.set(oid, content);
  res.setHeader('ETag', `"${oid}"`);
  res.statusCode = 200;
  res.end();
}

type CommitLine =
  | { key: 'header'; value: { summary: string; description?: string; parentCommit?: string } }
  | { key: 'file'; value: { path: string; content: string; encoding?: 'base64' | 'utf-8' } }
  | { key: 'lfsFile'; value: { path: string; oid: string; size: number } }
  | { key: 'deletedFile'; value: { path: string } };

/** Applies the NDJSON operations to the branch's files as one new revision. */
function commit(res: ServerResponse, url: URL, store: HubStore, repo: StoredRepo, revision: string, body: Buffer): void {
  const current = store.revision(repo, revision);
  if (!current) return sendError(res, 404, 'RevisionNotFound', `Invalid rev id: ${revision}`);
  const files: RepoFiles = Object.fromEntries([...current.files.values()].map((f) => [f.path, f.content]));
  const lines = body.toString('utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as CommitLine);
  const header = lines.find((l): l is Extract<CommitLine, { key: 'header' }> => l.key === 'header');
  if (!header) return sendError(res, 400, undefined, 'the commit has no header line');
  const paths: string[] = [];
  for (const line of lines) {
    if (line.key === 'file') files[line.value.path] = Buffer.from(line.value.content, line.value.encoding === 'base64' ? 'base64' : 'utf8');
    else if (line.key === 'lfsFile') {
      const object = store.lfsObjects.get(line.value.oid);
      if (!object) return sendError(res, 422, undefined, `LFS object ${line.value.oid} of ${line.value.path} was never uploaded`);
      files[line.value.path] = object;
    } else if (line.key === 'deletedFile') delete files[line.value.path];
    if (line.key !== 'header') paths.push(line.value.path);
  }
  const stored = store.setRevision(repo, current.name, files);
  store.commits.push({ type: repo.type, id: repo.id, revision: current.name, sha: stored.sha, summary: header.value.summary, paths });
  const repoPath = `${repo.type === 'dataset' ? 'datasets/' : ''}${repo.id}`;
  sendJson(res, 200, { success: true, commitOid: stored.sha, commitUrl: `${url.origin}/${repoPath}/commit/${stored.sha}`, hookOutput: '' });
}
