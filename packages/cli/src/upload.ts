// POST /datasets/upload with the file streamed from disk (never held whole in memory): the multipart body is
// written by hand around the file's chunks, so the bytes handed to fetch can be counted for a progress bar.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { UploadResult } from '@ftp/schema';
import { CliError } from './errors.ts';
import type { Api } from './http.ts';

const CONTENT_TYPES: Record<string, string> = {
  '.csv': 'text/csv',
  '.tsv': 'text/tab-separated-values',
  '.json': 'application/json',
  '.jsonl': 'application/jsonl',
  '.ndjson': 'application/jsonl',
  '.parquet': 'application/vnd.apache.parquet',
};

/** A filename as browsers put it into a quoted multipart parameter. */
function quotedFilename(name: string): string {
  return name.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/** The file's size, or a sentence saying why it cannot be uploaded. */
export async function uploadSize(file: string): Promise<number> {
  let stat: fs.Stats;
  try {
    stat = await fs.promises.stat(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(code === 'ENOENT' ? `${file}: no such file` : `${file}: ${(err as Error).message}`);
  }
  if (!stat.isFile()) throw new CliError(`${file}: not a file`);
  return stat.size;
}

/** Uploads `file` as the `file` part; `onProgress(sent, total)` follows the file's bytes as fetch takes them. */
export async function uploadDataset(api: Api, file: string, onProgress: (sent: number, total: number) => void = () => {}): Promise<UploadResult> {
  const size = await uploadSize(file);
  const boundary = `----ftune${randomBytes(16).toString('hex')}`;
  const name = path.basename(file);
  const contentType = CONTENT_TYPES[path.extname(name).toLowerCase()] ?? 'application/octet-stream';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${quotedFilename(name)}"\r\nContent-Type: ${contentType}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);

  async function* parts(): AsyncGenerator<Uint8Array> {
    yield head;
    let sent = 0;
    onProgress(0, size);
    for await (const chunk of fs.createReadStream(file, { highWaterMark: 256 * 1024 })) {
      const bytes = chunk as Buffer;
      yield bytes;
      sent += bytes.length;
      onProgress(sent, size);
    }
    if (sent !== size) throw new CliError(`${file} changed while it was being uploaded (${sent} bytes read, ${size} expected)`);
    yield tail;
  }
  const iterator = parts();
  // highWaterMark 0: a chunk is read from disk only when fetch asks for one, so the count follows the sending.
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { value, done } = await iterator.next();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      async cancel() {
        await iterator.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
  return api.json<UploadResult>('preprocessing', 'POST', '/datasets/upload', {
    kind: 'transfer',
    body,
    headers: {
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(head.length + size + tail.length),
    },
  });
}
