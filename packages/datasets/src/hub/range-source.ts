// One hub file as a ByteSource: every read is an HTTP Range request to the file's resolve URL at a pinned
// commit, so a Parquet reader fetches the footer and the row groups it needs, never the whole file up front.
import { Readable, Transform } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { NotFound, ServiceUnavailable } from '@ftp/platform';
import type { ByteSource } from '../readers/byte-source.ts';
import { hubFetch, hubUnreachable, type HubConnection } from './hub-client.ts';

/** `{endpoint}/datasets/{repo}/resolve/{sha}/{path}`, each path segment encoded (names may hold `#`, spaces). */
export function hubFileUrl(endpoint: string, repoId: string, sha: string, path: string): string {
  const encodedPath = path.split('/').map(encodeURIComponent).join('/');
  return `${endpoint}/datasets/${repoId}/resolve/${encodeURIComponent(sha)}/${encodedPath}`;
}

export function hubRangeSource(conn: HubConnection, file: { url: string; path: string; size: number }): ByteSource {
  return {
    size: file.size,
    async read(range) {
      if (range && (range.start < 0 || range.end > file.size || range.start > range.end)) {
        throw new RangeError(`range [${range.start}, ${range.end}) is outside ${file.path} (${file.size} bytes)`);
      }
      if (range && range.start === range.end) return Readable.from([]);
      return download(conn, file, range);
    },
  };
}

async function download(
  conn: HubConnection,
  file: { url: string; path: string; size: number },
  range: { start: number; end: number } | undefined,
): Promise<Readable> {
  // One timer for the whole download: it limits the wait for the answer, then how long the body may go quiet.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException('hub read timed out', 'TimeoutError')), conn.timeoutMs);
  const headers: Record<string, string> = range ? { Range: `bytes=${range.start}-${range.end - 1}` } : {};
  let response: Response;
  try {
    // The hub redirects LFS files to its CDN; fetch follows with the Range header (and drops the token
    // when the CDN is another origin, which its signed URL does not need).
    response = await hubFetch(conn)(file.url, { headers, signal: controller.signal });
  } catch (err) {
    clearTimeout(timer);
    throw err;
  }
  // A 200 to a range request is the whole file: fine only when the whole file was asked for.
  const whole = !range || (range.start === 0 && range.end === file.size);
  if (!(response.status === 206 && range) && !(response.status === 200 && whole)) {
    clearTimeout(timer);
    await response.body?.cancel();
    throw readFailure(conn, file.path, response.status, Boolean(range));
  }

  if (!response.body) {
    clearTimeout(timer);
    return Readable.from([]);
  }
  const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
  const out = new Transform({
    transform(chunk, _encoding, done) {
      timer.refresh();
      done(null, chunk);
    },
  });
  // Not pipeline(): it would hand the consumer the raw socket error; the consumer should see a 503.
  body.on('error', (err) => {
    clearTimeout(timer);
    out.destroy(hubUnreachable(conn, err));
  });
  body.on('end', () => clearTimeout(timer));
  // A consumer that stops early (a reader that has what it needs) cancels the rest of the download.
  out.on('close', () => {
    clearTimeout(timer);
    if (!body.readableEnded) body.destroy();
  });
  return body.pipe(out);
}

function readFailure(conn: HubConnection, path: string, status: number, ranged: boolean): Error {
  if (status === 401 || status === 403 || status === 404) {
    const error = new NotFound('hub dataset file', path);
    error.message += '; it was listed a moment ago, so the dataset may have been deleted or made private';
    return error;
  }
  if (ranged && status === 200) {
    // A server that ignores Range would send the whole file for every footer and row-group read.
    return new ServiceUnavailable('hub', `the model hub at ${conn.endpoint} ignored a range request for ${path}`);
  }
  return new ServiceUnavailable('hub', `the model hub at ${conn.endpoint} answered ${status} reading ${path}; try again later`);
}
