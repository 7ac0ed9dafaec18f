// Streamed text goes to the waiting API in batches, at most one every DELTA_INTERVAL_MS: the BullMQ queue writes each
// batch as one event in a Redis stream capped near 1,000 entries, so a report per token of several conversations
// could push events out before the API reads them. The first piece goes at once (time to first token).
import type { StreamDelta } from '@ftp/jobs/queues';

export const DELTA_INTERVAL_MS = 75;

export class DeltaBatcher {
  /** Text not sent yet, by conversation, in the order conversations first had some. */
  private readonly pending = new Map<number, string>();
  private timer: NodeJS.Timeout | undefined;
  private sentAt = -Infinity;

  constructor(
    private readonly report: (delta: StreamDelta) => void,
    private readonly intervalMs = DELTA_INTERVAL_MS,
  ) {}

  readonly add = (delta: StreamDelta): void => {
    if (delta.text === '') return;
    this.pending.set(delta.index, (this.pending.get(delta.index) ?? '') + delta.text);
    if (this.timer) return;
    const wait = this.sentAt + this.intervalMs - Date.now();
    if (wait <= 0) this.flush();
    else this.timer = setTimeout(() => this.flush(), wait);
  };

  /** Sends what is pending now: one delta per conversation, its pieces joined. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.sentAt = Date.now();
    for (const [index, text] of this.pending) this.report({ index, text });
    this.pending.clear();
  }
}
