// Responses shaped like the hub's: files with HEAD, single byte ranges (206 + Content-Range, 416 when out
// of bounds), strong ETag and Accept-Ranges (multi-range requests get the whole file, as HTTP allows); JSON errors.
import type { IncomingMessage, ServerResponse } from 'node:http';

export function sendFile(req: IncomingMessage, res: ServerResponse, content: Buffer, opts: { etag: string }): void {
  const size = content.length;
  res.setHeader('ETag', `"${opts.etag}"`);
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('Content-Type', 'application/octet-stream');

  const range = parseRange(req.headers.range, size);
  if (range === 'unsatisfiable') {
    res.statusCode = 416;
    res.setHeader('Content-Range', `bytes */${size}`);
    return void res.end();
  }
  const { start, end } = range ?? { start: 0, end: size - 1 };
  if (range) {
    res.statusCode = 206;
    res.setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
  } else {
    res.statusCode = 200;
  }
  const length = Math.max(0, end - start + 1);
  res.setHeader('Content-Length', String(length));
  if (req.method === 'HEAD') return void res.end();
  res.end(content.subarray(start, start + length));
}

/** `bytes=a-b`, `bytes=a-` or `bytes=-n`, inclusive ends; undefined when absent or not a single range. */
function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  const match = header === undefined ? null : /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return undefined;
  const [, from = '', to = ''] = match;
  if (from === '' && to === '') return undefined;
  let start: number;
  let end: number;
  if (from === '') {
    start = Math.max(0, size - Number(to));
    end = size - 1;
  } else {
    start = Number(from);
    end = to === '' ? size - 1 : Math.min(Number(to), size - 1);
  }
  if (start >= size || start > end) return 'unsatisfiable';
  return { start, end };
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}

/** The hub's error shape: JSON `{error}` plus `X-Error-Code`, which @huggingface/hub checks for 404s. */
export function sendError(res: ServerResponse, status: number, code: string | undefined, message: string): void {
  if (code) res.setHeader('X-Error-Code', code);
  res.setHeader('X-Error-Message', message);
  sendJson(res, status, { error: message });
}
