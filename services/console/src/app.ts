// Builds the web console's app (no listen): the static build of web/ (dist/, made by `pnpm --filter @ftp/console build`,
// which scripts/bootstrap.sh runs) and /api/<service>/… forwarded to each service, so the browser talks to one origin:
// no CORS, and server-sent events and uploads stream through with the caller's Authorization header. Downloads, which
// a browser saves from a link that carries no header, go through one-time links (downloads.ts).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import fastifyHttpProxy from '@fastify/http-proxy';
import fastifyStatic from '@fastify/static';
import { registerDownloads } from './downloads.ts';

/** The services the console reaches, each under /api/<name>/ (openai: the /v1 surface, /api/openai/v1/…). */
export const CONSOLE_UPSTREAMS = ['preprocessing', 'training', 'export', 'inference', 'openai', 'tinker'] as const;
export type ConsoleUpstream = (typeof CONSOLE_UPSTREAMS)[number];

export const CONSOLE_VERSION = '1.0.0';
export const DEFAULT_DIST_DIR = fileURLToPath(new URL('../dist/', import.meta.url));

export interface ConsoleOptions {
  /** Base URL of each service, e.g. http://127.0.0.1:8002. */
  upstreams: Record<ConsoleUpstream, string>;
  /** The web build (default services/console/dist). */
  distDir?: string;
  /** The process's logger (the embedded stack shares its own); default Fastify's, at `logLevel`. */
  logger?: FastifyBaseLogger;
  logLevel?: string;
}

// A strict policy doubles as the check that the page loads nothing from elsewhere (no CDN); Mantine sets inline styles.
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

const MISSING_BUILD_HINT = 'build it with `bash scripts/bootstrap.sh` (or `pnpm --filter @ftp/console build`)';

export async function buildConsoleApp(options: ConsoleOptions): Promise<FastifyInstance> {
  const distDir = path.resolve(options.distDir ?? DEFAULT_DIST_DIR);
  const app = options.logger
    ? Fastify({ loggerInstance: options.logger, requestTimeout: 0 })
    : Fastify({ logger: { level: options.logLevel ?? 'info' }, requestTimeout: 0 });
  const built = fs.existsSync(path.join(distDir, 'index.html'));
  if (!built) app.log.error({ distDir }, `the console's web build is missing; ${MISSING_BUILD_HINT}`);

  app.get('/health', async (_request, reply) => {
    const assets = built ? 'ok' : `missing: ${MISSING_BUILD_HINT}`;
    return reply.code(built ? 200 : 503).send({ status: built ? 'ok' : 'degraded', service: 'console', version: CONSOLE_VERSION, checks: { assets } });
  });

  for (const name of CONSOLE_UPSTREAMS) await registerUpstream(app, name, options.upstreams[name]);
  registerDownloads(app, options.upstreams);

  if (built) {
    await app.register(fastifyStatic, {
      root: distDir,
      // Vite names its assets by content hash: they never change; index.html always is asked again.
      setHeaders: (reply, filePath) => {
        reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
        reply.header('cache-control', filePath.includes(`${path.sep}assets${path.sep}`) ? 'public, max-age=31536000, immutable' : 'no-cache');
      },
    });
  }
  // Client-side routes (/jobs/…, /datasets/…) are pages of the single-page app: they get index.html.
  app.setNotFoundHandler((request, reply) => {
    const page = request.method === 'GET' && !request.url.startsWith('/api/') && !path.extname(request.url.split('?')[0]!);
    if (!page) return reply.code(404).send({ detail: `no endpoint ${request.method} ${request.url.split('?')[0]}` });
    if (!built) return missingBuildPage(reply, distDir);
    return reply.header('content-security-policy', CONTENT_SECURITY_POLICY).header('cache-control', 'no-cache').sendFile('index.html');
  });
  return app;
}

async function registerUpstream(app: FastifyInstance, name: ConsoleUpstream, upstream: string): Promise<void> {
  await app.register(fastifyHttpProxy, {
    upstream,
    prefix: `/api/${name}`,
    // The services carry their own time limits (an evaluation waits up to INFERENCE_TIMEOUT_MS for its first byte, a
    // job's event stream stays open for the whole run): the console adds none of its own.
    undici: { headersTimeout: 0, bodyTimeout: 0 },
    replyOptions: {
      onError: (reply, { error }) => {
        reply.log.warn({ err: error, upstream }, `the ${name} service cannot be reached`);
        void reply.code(503).send({ detail: `the ${name} service at ${upstream} cannot be reached${networkCode(error)}; is it running?` });
      },
    },
  });
}

/** The network error under reply-from's wrapper (ECONNREFUSED, ENOTFOUND, …), as ` (CODE)`, or nothing. */
function networkCode(error: Error): string {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const code = (e as Error & { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return ` (${code})`;
  }
  return '';
}

function missingBuildPage(reply: FastifyReply, distDir: string) {
  const escape = (s: string) => s.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]!);
  return reply
    .code(503)
    .type('text/html; charset=utf-8')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Console not built</title></head><body style="font:16px system-ui;margin:2rem">` +
        `<h1>The console is not built</h1><p>There is no web build in <code>${escape(distDir)}</code>: ${escape(MISSING_BUILD_HINT)}, then reload.</p>` +
        `<p>The APIs are reachable meanwhile under <code>/api/&lt;service&gt;/</code>.</p></body></html>`,
    );
}
