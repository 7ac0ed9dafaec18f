// A local stand-in for the model hub's HTTP API, for tests: revision info, tree listings (paginated with
// a `Link` header), paths-info, and file downloads with HEAD, Range, ETag and the LFS redirect to a CDN;
// and the writes of createRepo and commit (preupload, LFS batch and upload, NDJSON commit), stored in the HubStore.
// Only the parts @huggingface/hub and our services call; loopback only, on a free port.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleRepoRequest } from './repo-routes.ts';
import { handleWriteRequest } from './commit-routes.ts';
import { sendError, sendFile } from './responses.ts';
import { HubStore, type RepoRevisions } from './store.ts';

export type { CommitRecord, RepoFiles, RepoRevisions } from './store.ts';

export interface HubStandinOptions {
  /** Dataset repos: id → branch → files, e.g. `{ 'acme/chats': { main: { 'data/x.parquet': buf } } }`. */
  datasets?: Record<string, RepoRevisions>;
  models?: Record<string, RepoRevisions>;
  /** `cardData` per repo id: what the hub parses from a README's YAML header (the stand-in parses none). */
  cardData?: Record<string, Record<string, unknown>>;
  /** When set, every repo is private: requests must carry `Authorization: Bearer <token>`, and writes need this one. */
  token?: string;
  /** Tree entries per page; the hub pages at 1000, tests lower it to exercise the `Link` header. */
  pageSize?: number;
}

export interface RecordedRequest {
  method: string;
  /** Path and query as sent. */
  url: string;
  range?: string;
  authorization?: string;
  status: number;
  /** Body bytes sent back, so a test can tell a range read from a full download. */
  bytesSent: number;
}

export interface HubStandin {
  /** Base URL to use as the hub endpoint (HF_ENDPOINT), e.g. `http://127.0.0.1:40123`. */
  url: string;
  store: HubStore;
  /** Every request in arrival order; tests may clear it with `requests.length = 0`. */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startHubStandin(options: HubStandinOptions = {}): Promise<HubStandin> {
  const store = new HubStore();
  for (const [type, repos] of [['dataset', options.datasets], ['model', options.models]] as const) {
    for (const [id, revisions] of Object.entries(repos ?? {})) {
      store.setRepo(type, id, revisions, options.cardData?.[id]);
    }
  }
  const routeOptions = { store, token: options.token, pageSize: options.pageSize ?? 1000 };
  const requests: RecordedRequest[] = [];

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`);
    const record: RecordedRequest = { method: req.method ?? 'GET', url: req.url ?? '/', status: 0, bytesSent: 0 };
    if (req.headers.range) record.range = req.headers.range;
    if (req.headers.authorization) record.authorization = req.headers.authorization;
    requests.push(record);
    countBytesSent(res, record);

    const [first, sha256] = url.pathname.split('/').slice(1);
    const handled =
      first === 'cdn-lfs' && sha256
        ? Promise.resolve(sendLfsObject(store, sha256, req, res))
        : handleWriteRequest(req, res, url, routeOptions).then((found) => found || handleRepoRequest(req, res, url, routeOptions));
    handled.then(
      (found) => found || sendError(res, 404, undefined, `no hub endpoint at ${url.pathname}`),
      (err: unknown) => (res.headersSent ? res.destroy() : sendError(res, 500, undefined, String(err))),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    store,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

/** The CDN the hub redirects LFS downloads to: content-addressed, with ranges. */
function sendLfsObject(store: HubStore, sha256: string, req: Parameters<typeof sendFile>[0], res: ServerResponse): true {
  const object = store.lfsObjects.get(sha256);
  if (!object) sendError(res, 404, 'EntryNotFound', 'Entry not found');
  else sendFile(req, res, object, { etag: sha256 });
  return true;
}

function countBytesSent(res: ServerResponse, record: RecordedRequest): void {
  const count = (chunk: unknown) => {
    if (typeof chunk === 'string' || chunk instanceof Uint8Array) record.bytesSent += Buffer.byteLength(chunk);
  };
  const write = res.write.bind(res);
  const end = res.end.bind(res);
  res.write = ((chunk: unknown, ...rest: never[]) => (count(chunk), write(chunk as never, ...rest))) as typeof res.write;
  res.end = ((chunk?: unknown, ...rest: never[]) => (count(chunk), end(chunk as never, ...rest))) as typeof res.end;
  res.on('finish', () => (record.status = res.statusCode));
}
