// Job queue: each queue's name and payload schema is defined once (defineQueue) and shared by the
// producer (an API route) and the consumer (a worker). Payloads carry ids only; the worker loads the rest.
// Drivers: in-process (embedded default, below) and BullMQ on Redis (scaled out, later).
import type { z } from 'zod';

export interface QueueDefinition<P> {
  name: string;
  payload: z.ZodType<P>;
}

export function defineQueue<P>(name: string, payload: z.ZodType<P>): QueueDefinition<P> {
  return { name, payload };
}

export type JobHandler<P> = (payload: P) => Promise<void>;

export interface JobQueue {
  add<P>(queue: QueueDefinition<P>, payload: P): Promise<void>;
  /** Starts consuming; at most `concurrency` handlers of this queue run at once (default 1). */
  process<P>(queue: QueueDefinition<P>, handler: JobHandler<P>, options?: { concurrency?: number }): void;
  /** Removes waiting payloads that match; returns how many were removed. */
  removeWaiting<P>(queue: QueueDefinition<P>, match: (payload: P) => boolean): Promise<number>;
  check(): Promise<void>;
  /** Stops taking new work and waits for running handlers to finish. */
  close(): Promise<void>;
}

interface Lane {
  waiting: unknown[];
  running: number;
  concurrency: number;
  handler?: JobHandler<unknown>;
}

/**
 * In-process queue: FIFO per queue name, handlers in the same process. It is not durable: on start,
 * the owner of each queue re-adds the work its rows say is still pending (rows are the source of truth).
 */
export class InProcessQueue implements JobQueue {
  private readonly lanes = new Map<string, Lane>();
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly onHandlerError: (queue: string, err: unknown) => void = () => undefined) {}

  async add<P>(queue: QueueDefinition<P>, payload: P): Promise<void> {
    if (this.closed) throw new Error(`queue ${queue.name} is closed`);
    this.lane(queue.name).waiting.push(queue.payload.parse(payload));
    this.pump(queue.name);
  }

  process<P>(queue: QueueDefinition<P>, handler: JobHandler<P>, options: { concurrency?: number } = {}): void {
    const lane = this.lane(queue.name);
    if (lane.handler) throw new Error(`queue ${queue.name} already has a consumer`);
    lane.handler = handler as JobHandler<unknown>;
    lane.concurrency = Math.max(1, options.concurrency ?? 1);
    this.pump(queue.name);
  }

  async removeWaiting<P>(queue: QueueDefinition<P>, match: (payload: P) => boolean): Promise<number> {
    const lane = this.lane(queue.name);
    const before = lane.waiting.length;
    lane.waiting = lane.waiting.filter((p) => !match(p as P));
    return before - lane.waiting.length;
  }

  async check(): Promise<void> {
    if (this.closed) throw new Error('queue is closed');
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.inFlight]);
  }

  private lane(name: string): Lane {
    let lane = this.lanes.get(name);
    if (!lane) {
      lane = { waiting: [], running: 0, concurrency: 1 };
      this.lanes.set(name, lane);
    }
    return lane;
  }

  private pump(name: string): void {
    const lane = this.lane(name);
    while (!this.closed && lane.handler && lane.running < lane.concurrency && lane.waiting.length > 0) {
      const payload = lane.waiting.shift();
      lane.running += 1;
      const run = lane.handler(payload)
        .catch((err: unknown) => this.onHandlerError(name, err))
        .finally(() => {
          lane.running -= 1;
          this.inFlight.delete(run);
          this.pump(name);
        });
      this.inFlight.add(run);
    }
  }
}
