// GET /exports/{job_id}/download: a file artifact streamed to disk, never held whole in memory. It is written to
// `<name>.part` beside its final name and renamed only once its size matches the answer's Content-Length, so a
// broken download never leaves a file that looks complete.
import fs from 'node:fs';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import cliProgress from 'cli-progress';
import type { ExportType, OnnxVariant } from '@ftp/schema';
import { CliError } from './errors.ts';
import { segment, type Api } from './http.ts';
import { formatBytes, printLine } from './output.ts';

export interface DownloadRequest {
  jobId: string;
  type: ExportType;
  /** type onnx: one model file instead of the folder's archive. */
  variant?: OnnxVariant | undefined;
  /** A stored checkpoint's export instead of the final model's. */
  checkpointStep?: number | undefined;
  /** The export of a Tinker run's sampler weights by this name (jobId the run's id). */
  checkpointName?: string | undefined;
  /** The folder the file goes into; made when missing. */
  dir: string;
}

/** What --json adds to the export document for each file written. */
export interface Downloaded {
  path: string;
  size_bytes: number;
}

/** live: a progress bar (a terminal); lines: one line before and one after; quiet: nothing (--json). */
export type DownloadMode = 'live' | 'lines' | 'quiet';

/** The file name of a Content-Disposition header, reduced to a plain name (no folders, nothing hidden). */
export function attachmentName(header: string | null): string | undefined {
  const quoted = header ? /filename="([^"]*)"/i.exec(header)?.[1] ?? /filename=([^;\s]+)/i.exec(header)?.[1] : undefined;
  const name = quoted ? path.basename(quoted.replace(/\\/g, '/')) : '';
  return name && !name.startsWith('.') ? name : undefined;
}

function progressBar(mode: DownloadMode, name: string, size: number): { update(bytes: number): void; stop(): void } {
  if (mode === 'lines') printLine(`downloading ${name} (${formatBytes(size)})`);
  if (mode !== 'live') return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    { format: '{name} [{bar}] {percentage}% | {received} of {size} | ETA {eta_formatted}', hideCursor: true, clearOnComplete: true },
    cliProgress.Presets.shades_classic,
  );
  const payload = (bytes: number) => ({ name, received: formatBytes(bytes), size: formatBytes(size) });
  bar.start(Math.max(size, 1), 0, payload(0));
  return { update: (bytes) => bar.update(bytes, payload(bytes)), stop: () => bar.stop() };
}

/** Downloads the `file` artifact of `type` into `dir` under the service's name for it; returns where it went. */
export async function downloadExport(api: Api, request: DownloadRequest, mode: DownloadMode): Promise<Downloaded> {
  const query = new URLSearchParams({ type: request.type });
  if (request.checkpointStep !== undefined) query.set('checkpoint_step', String(request.checkpointStep));
  if (request.checkpointName !== undefined) query.set('checkpoint_name', request.checkpointName);
  if (request.variant !== undefined) query.set('variant', request.variant);
  const controller = new AbortController();
  const res = await api.send('export', 'GET', `/exports/${segment(request.jobId)}/download?${query}`, { kind: 'transfer', signal: controller.signal });
  const length = Number(res.headers.get('content-length'));
  if (!res.body || !Number.isSafeInteger(length) || length < 0 || res.headers.get('content-length') === null) {
    controller.abort();
    throw new CliError(`the export service sent the ${request.type} file of job ${request.jobId} without a Content-Length, so its size cannot be checked`);
  }
  const name = attachmentName(res.headers.get('content-disposition')) ?? `${request.jobId}-${request.type}`;
  await fs.promises.mkdir(request.dir, { recursive: true });
  const target = path.join(request.dir, name);
  const partial = `${target}.part`;
  const bar = progressBar(mode, name, length);
  let received = 0;
  const count = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      received += chunk.length;
      bar.update(received);
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>), count, fs.createWriteStream(partial));
  } catch (err) {
    await fs.promises.rm(partial, { force: true });
    throw new CliError(`the download of ${name} broke off after ${formatBytes(received)} of ${formatBytes(length)}: ${(err as Error).message}`);
  } finally {
    bar.stop();
  }
  if (received !== length) {
    await fs.promises.rm(partial, { force: true });
    throw new CliError(`the download of ${name} is ${received} bytes where the export service announced ${length}; nothing was kept, try again`);
  }
  await fs.promises.rename(partial, target);
  return { path: target, size_bytes: received };
}
