// What every reader yields, and the batching that keeps a per-row await out of the hot path.
import type { Readable } from 'node:stream';

export type DatasetRow = Record<string, unknown>;

/** Sets a row field; a column called "__proto__" must become a field, not the object's prototype. */
export function setField(row: DatasetRow, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(row, key, { value, enumerable: true, writable: true, configurable: true });
  else row[key] = value;
}

/** One row larger than this is refused: usually an unclosed quote or bracket, and always a memory risk. */
export const MAX_ROW_BYTES = 32 * 1024 * 1024;

/** Everything an object-mode stream has buffered, up to `max` items per batch, awaiting only when it is dry.
 *  A plain `for await` over the stream costs a promise per item, more than parsing a short CSV row. */
export async function* drainInBatches<T>(stream: Readable, max: number): AsyncGenerator<T[]> {
  let failure: unknown;
  let ended = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };
  const onEnd = () => {
    ended = true;
    notify();
  };
  const onError = (err: unknown) => {
    failure ??= err;
    notify();
  };
  // A stream destroyed without an error never ends; without this the loop would wait forever.
  const onClose = () => {
    if (!ended) failure ??= new Error('the stream closed before it ended');
    notify();
  };
  stream.on('readable', notify).on('end', onEnd).on('error', onError).on('close', onClose);
  try {
    for (;;) {
      const batch: T[] = [];
      let item: T | null;
      while (batch.length < max && (item = stream.read() as T | null) !== null) batch.push(item);
      if (batch.length > 0) {
        yield batch;
        continue;
      }
      // Items pushed before a failure are still delivered: the rows before a bad one come first.
      if (failure !== undefined) throw failure;
      if (ended) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    stream.off('readable', notify).off('end', onEnd).off('error', onError).off('close', onClose);
  }
}
