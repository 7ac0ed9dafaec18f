// Streams one output split as JSONL into blob storage while it is produced: lines are gathered into
// chunks of about 256 KiB, written with backpressure, and the first records are kept as samples.
import { PassThrough } from 'node:stream';
import type { BlobStore } from '@ftp/platform';

const CHUNK_CHARS = 256 * 1024;
export const SAMPLES_PER_SPLIT = 5;

export class SplitWriter {
  readonly samples: Record<string, unknown>[] = [];
  numRows = 0;
  private readonly stream = new PassThrough();
  private readonly stored: Promise<unknown>;
  private pending = '';

  constructor(blobs: BlobStore, readonly splitName: string, readonly key: string) {
    this.stored = blobs.put(key, this.stream);
    // Errors surface through finish()/abort(); this keeps an early failure from being "unhandled".
    this.stored.catch(() => undefined);
  }

  async write(record: Record<string, unknown>): Promise<void> {
    if (this.samples.length < SAMPLES_PER_SPLIT) this.samples.push(record);
    this.numRows += 1;
    this.pending += `${JSON.stringify(record)}\n`;
    if (this.pending.length >= CHUNK_CHARS) await this.flush();
  }

  private async flush(): Promise<void> {
    const chunk = this.pending;
    this.pending = '';
    if (!this.stream.write(chunk)) {
      await new Promise<void>((resolve, reject) => {
        const onDrain = () => {
          this.stream.off('error', onError);
          resolve();
        };
        const onError = (err: Error) => {
          this.stream.off('drain', onDrain);
          reject(err);
        };
        this.stream.once('drain', onDrain).once('error', onError);
      });
    }
  }

  async finish(): Promise<void> {
    if (this.pending) await this.flush();
    this.stream.end();
    await this.stored;
  }

  /** Stops the write; the blob store discards the partial file. */
  async abort(reason: Error): Promise<void> {
    this.stream.destroy(reason);
    await this.stored.catch(() => undefined);
  }
}
