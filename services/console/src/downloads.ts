// Browser downloads that stream: a page cannot put its Authorization header on a link, and fetching the file into a
// blob holds all of it (a GGUF is gigabytes) in the tab's memory. So the page asks first, with its key
// (POST /downloads {service, path}); the console opens the service's answer then, relays any refusal as it is, and
// hands back a one-time link, /downloads/<token>, that streams that answer to whoever follows it within TOKEN_TTL_MS.
// The key travels in headers only: neither the link nor the console's memory holds it (the pool counts links per
// credential by a hash of it). Only a service's download endpoints can be opened, and those authenticate the caller: a
// request without a valid key is refused by the service before any link exists.
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Agent, request, type Dispatcher } from 'undici';

/** How long a minted link waits to be followed (the page follows it at once). */
export const TOKEN_TTL_MS = 30_000;
/** Links one credential has minted and not yet followed, each holding a connection open: more is a page gone wrong. */
export const MAX_WAITING = 32;
/** What a link may open: the files a service streams to its owner, never an endpoint anyone may read (/health). */
const DOWNLOADABLE: Readonly<Record<string, RegExp>> = { export: /^\/exports\/[^/?#]+\/download(\?[^#]*)?$/ };
/** The answer's headers the browser needs to save the file under its name and show its progress. */
const PASSED_HEADERS = ['content-type', 'content-length', 'content-disposition', 'last-modified', 'etag'];

interface Waiting {
  /** Whose pool the link counts against (a hash of the Authorization header). */
  owner: string;
  status: number;
  headers: Record<string, string>;
  body: Dispatcher.ResponseData['body'];
  timer: NodeJS.Timeout;
}

/** Registers POST /downloads and GET /downloads/:token; `upstreams` maps a service name to its base URL. */
export function registerDownloads(app: FastifyInstance, upstreams: Readonly<Record<string, string>>): void {
  const waiting = new Map<string, Waiting>();
  // The export service paces the file (it streams from the blob store): no limit of the console's own.
  const agent = new Agent({ headersTimeout: 0, bodyTimeout: 0 });
  app.addHook('onClose', async () => {
    for (const entry of waiting.values()) forget(entry);
    waiting.clear();
    await agent.close();
  });

  app.post<{ Body: { service?: unknown; path?: unknown } }>('/downloads', async (req, reply) => {
    const { service, path } = req.body ?? {};
    const upstream = typeof service === 'string' && Object.hasOwn(upstreams, service) ? upstreams[service] : undefined;
    if (!upstream) return refuse(reply, 'service', `service must be one of ${Object.keys(upstreams).join(', ')}`, 'enum');
    const downloadable = Object.hasOwn(DOWNLOADABLE, service as string) ? DOWNLOADABLE[service as string] : undefined;
    if (typeof path !== 'string' || !downloadable?.test(path)) {
      return refuse(reply, 'path', 'path must be a download endpoint of the service, e.g. /exports/<job_id>/download?type=gguf on export', 'value_error');
    }
    const authorization = req.headers.authorization;
    const owner = createHash('sha256').update(authorization ?? '').digest('base64url');
    const full = () => [...waiting.values()].filter((entry) => entry.owner === owner).length >= MAX_WAITING;
    if (full()) return tooMany(reply);
    let answer: Dispatcher.ResponseData;
    try {
      answer = await request(`${upstream}${path}`, { method: 'GET', dispatcher: agent, headers: authorization ? { authorization } : {} });
    } catch (err) {
      req.log.warn({ err, upstream }, `the ${service} service cannot be reached`);
      return reply.code(503).send({ detail: `the ${service as string} service at ${upstream} cannot be reached; is it running?` });
    }
    // A body destroyed before anyone reads it (an expired link, a closing console, a client gone) errors; that error is
    // expected and must not reach the process as an unhandled one.
    answer.body.on('error', (err) => req.log.debug({ err, service }, 'a download body was dropped before it was read'));
    const headers = Object.fromEntries(PASSED_HEADERS.flatMap((name) => (typeof answer.headers[name] === 'string' ? [[name, answer.headers[name]]] : [])));
    // A refusal (no such file, a wrong or missing key) is the service's own answer, shown by the page; no link is made.
    if (answer.statusCode < 200 || answer.statusCode >= 300) return reply.code(answer.statusCode).headers(headers).send(answer.body);
    // Other links of this credential may have been minted while this one was opened.
    if (full()) {
      answer.body.destroy();
      return tooMany(reply);
    }
    const token = randomBytes(24).toString('base64url');
    const entry: Waiting = {
      owner,
      status: answer.statusCode,
      headers,
      body: answer.body,
      timer: setTimeout(() => {
        waiting.delete(token);
        forget(entry);
      }, TOKEN_TTL_MS),
    };
    waiting.set(token, entry);
    return reply.code(201).header('cache-control', 'no-store').send({ url: `/downloads/${token}`, expires_in_s: TOKEN_TTL_MS / 1000 });
  });

  app.get<{ Params: { token: string } }>('/downloads/:token', async (req, reply) => {
    const entry = waiting.get(req.params.token);
    if (!entry) return reply.code(404).send({ detail: 'this download link was used already or has expired; start the download again from the console' });
    waiting.delete(req.params.token);
    clearTimeout(entry.timer);
    return reply.code(entry.status).headers({ ...entry.headers, 'cache-control': 'no-store' }).send(entry.body);
  });
}

function tooMany(reply: FastifyReply) {
  return reply.code(429).send({ detail: `${MAX_WAITING} of your downloads are waiting to start; follow or drop them first` });
}

function forget(entry: Waiting): void {
  clearTimeout(entry.timer);
  entry.body.destroy();
}

/** A field of the request refused, in the 422 body every service answers (decisions.md: `[{loc, msg, type}]`). */
function refuse(reply: FastifyReply, field: string, msg: string, type: string): FastifyReply {
  return reply.code(422).send({ detail: [{ loc: ['body', field], msg, type }] });
}
