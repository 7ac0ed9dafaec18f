// Job queue: each queue's name, payload schema and (for work that answers) result schema is defined once
// (defineQueue, in @ftp/jobs/queues) and shared by producers (API routes) and consumers (workers). Payloads carry ids
// or bounded request bodies, never a secret. Each queue is its own lane with its own concurrency.
// Drivers: in-process (embedded default, below) and BullMQ on Redis (scaled out, queue-bullmq.ts); the rest
// of the code cannot tell which one it has.
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { AppError, GatewayTimeout, ServiceUnavailable, UnprocessableEntity, type ValidationIssue } from './errors.ts';

export interface QueueDefinition<P, R = void> {
  name: string;
  payload: z.ZodType<P>;
  /** Work that answers its producer (request()): the result's schema. */
  result?: z.ZodType<R>;
  /** Handlers of this queue one worker runs at once, unless the worker says otherwise. */
  concurrency: number;
}

export function defineQueue<P, R = void>(name: string, payload: z.ZodType<P>, options: { result?: z.ZodType<R>; concurrency?: number } = {}): QueueDefinition<P, R> {
  return { name, payload, ...(options.result ? { result: options.result } : {}), concurrency: options.concurrency ?? 1 };
}

export interface WorkContext {
  /** The queue's id of this piece of work. */
  id: string;
  /** Aborted when the producer gives up on a request (its time limit, a client gone). Closing a consumer does
   *  not abort it: close waits for the handlers at work. */
  signal: AbortSignal;
  /** Sends `data` to the producer waiting on this request (its onReport), e.g. text as it is generated. Fire and
   *  forget: delivered in order and before the result, best effort (a report that cannot be delivered is dropped,
   *  never an error of the work); a no-op for added work, or once nobody waits. Data must survive JSON. */
  report(data: unknown): void;
}

export type JobHandler<P, R> = (payload: P, context: WorkContext) => Promise<R>;

export interface Consumer {
  /** Stops taking new work and waits for the handlers at work (abort them first to hurry them). */
  close(): Promise<void>;
}

export interface RequestOptions {
  /** Aborting cancels the work wherever it runs (removed while waiting, its handler's signal aborted while
   *  running); request() then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called in this process with each report (WorkContext.report) of the work, in order, while request() waits;
   *  never after it settled. An exception it throws is swallowed: a listener cannot fail the work. */
  onReport?: (data: unknown) => void;
}

/** A piece of work the queue holds: waiting for a worker, or taken by one (`active`). */
export interface PendingWork<P> {
  id: string;
  payload: P;
  state: 'waiting' | 'active';
  queuedAt: Date;
}

export interface JobQueue {
  /** False for the in-process queue: what it held is gone with the process, so the owner re-adds pending
   *  work from the rows at start. */
  readonly durable: boolean;
  /** Queues work nobody waits on (training jobs, exports); the rows say how it went. */
  add<P>(queue: QueueDefinition<P, void>, payload: P): Promise<void>;
  /** Queues work and waits for its result. A handler's AppError (404, 409, 422, 503, …) is thrown here as
   *  the same kind of error; a worker that stops mid-way is a ServiceUnavailable. */
  request<P, R>(queue: QueueDefinition<P, R>, payload: P, options?: RequestOptions): Promise<R>;
  /** Consumes `queue` with at most `concurrency` handlers at once (default: the queue's own). */
  process<P, R>(queue: QueueDefinition<P, R>, handler: JobHandler<P, R>, options?: { concurrency?: number }): Consumer;
  /** The work of `queue` not finished yet (what the reconciler compares with the rows), oldest first. */
  pending<P, R>(queue: QueueDefinition<P, R>): Promise<Array<PendingWork<P>>>;
  /** How many entries `queue` holds in each state (metrics: bullmq_job_count). BullMQ: its own getJobCounts, what its
   *  Prometheus exporter reads (waiting, active, delayed, prioritized, paused, completed, failed, …); in-process:
   *  waiting and active. */
  jobCounts(queue: string): Promise<Record<string, number>>;
  /** BullMQ: its own Prometheus exporter's text for these queues (bullmq_job_count by state, completed and failed
   *  totals), one group per metric; null for the in-process queue, whose counts the metrics read with jobCounts. */
  prometheusText(queues: readonly string[]): Promise<string | null>;
  /** Removes work that still waits (a request's producer is told it was dropped); false when it no longer waits. */
  discard<P, R>(queue: QueueDefinition<P, R>, id: string): Promise<boolean>;
  /** `listener` hears of work a stopped worker had taken that the queue drops unrun (BullMQ: stalled), with its
   *  payload: the rows say what becomes of it, so it is news, not an error. */
  onStalled(listener: (queue: string, payload: unknown) => void): void;
  check(): Promise<void>;
  /** Closes consumers and producers. */
  close(): Promise<void>;
}

/** How a handler's outcome crosses a process boundary: its value, or the error it threw as data. */
export type Outcome<R> = { ok: true; value: R } | { ok: false; error: WireError };

export interface WireError {
  status: number;
  detail: string;
  issues?: ValidationIssue[];
}

/** Runs a handler and captures its outcome. Only AppErrors (errors meant for the client) travel as data;
 *  anything else is a fault of the worker, reported as such. */
export async function settle<R>(run: () => Promise<R>): Promise<Outcome<R>> {
  try {
    return { ok: true, value: await run() };
  } catch (err) {
    if (err instanceof UnprocessableEntity) return { ok: false, error: { status: 422, detail: err.message, issues: err.issues } };
    if (err instanceof AppError) return { ok: false, error: { status: err.statusCode, detail: err.message } };
    return { ok: false, error: { status: 500, detail: `the worker failed: ${(err as Error)?.message ?? String(err)}` } };
  }
}

/** Hands a report to its producer's listener (RequestOptions.onReport), whose failure is its own: it must not fail
 *  the work, nor stop a driver's event reader. */
export function deliverReport(onReport: ((data: unknown) => void) | undefined, data: unknown): void {
  try {
    onReport?.(data);
  } catch {
    // the listener's own problem
  }
}

/** An error sent as data, as the error the producer throws: the same status and sentence. */
export class RemoteError extends AppError {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

export function errorFromWire(error: WireError): Error {
  if (error.status === 422 && error.issues) return new UnprocessableEntity(error.issues);
  if (error.status === 503) return new ServiceUnavailable('worker', error.detail);
  if (error.status === 504) return new GatewayTimeout(error.detail);
  if (error.status >= 500) return new Error(error.detail); // logged and answered as an internal error
  return new RemoteError(error.status, error.detail);
}

export function unwrap<R>(outcome: Outcome<R>): R {
  if (outcome.ok) return outcome.value;
  throw errorFromWire(outcome.error);
}

interface Item {
  id: string;
  payload: unknown;
  queuedAt: Date;
  controller: AbortController;
  /** Set for request(): where the outcome goes, and its reports while it waits. */
  answer?: (outcome: Outcome<unknown>) => void;
  onReport?: (data: unknown) => void;
}

interface Lane {
  waiting: Item[];
  running: Map<string, Item>;
  concurrency: number;
  handler?: JobHandler<unknown, unknown>;
  idle: Set<() => void>;
}

/**
 * In-process queue: FIFO per queue, handlers in the same process. It is not durable: on start, the owner
 * re-adds the work its rows say is still pending (rows are the source of truth).
 */
export class InProcessQueue implements JobQueue {
  readonly durable = false;
  private readonly lanes = new Map<string, Lane>();
  private closed = false;

  constructor(private readonly onHandlerError: (queue: string, err: unknown) => void = () => undefined) {}

  async add<P>(queue: QueueDefinition<P, void>, payload: P): Promise<void> {
    this.enqueue(queue, payload);
  }

  request<P, R>(queue: QueueDefinition<P, R>, payload: P, options: RequestOptions = {}): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const signal = options.signal;
      if (signal?.aborted) return reject(signal.reason);
      let item: Item;
      const onAbort = () => {
        const lane = this.lane(queue.name);
        lane.waiting = lane.waiting.filter((w) => w !== item);
        delete item.onReport; // nobody listens any more
        item.controller.abort(signal!.reason);
        reject(signal!.reason);
      };
      const answer = (outcome: Outcome<unknown>) => {
        signal?.removeEventListener('abort', onAbort);
        try {
          resolve(unwrap(outcome) as R);
        } catch (err) {
          reject(err);
        }
      };
      item = this.enqueue(queue, payload, { answer, ...(options.onReport ? { onReport: options.onReport } : {}) });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  process<P, R>(queue: QueueDefinition<P, R>, handler: JobHandler<P, R>, options: { concurrency?: number } = {}): Consumer {
    const lane = this.lane(queue.name);
    if (lane.handler) throw new Error(`queue ${queue.name} already has a consumer in this process`);
    lane.handler = handler as JobHandler<unknown, unknown>;
    lane.concurrency = Math.max(1, options.concurrency ?? queue.concurrency);
    this.pump(queue.name);
    return {
      close: async () => {
        if (lane.handler === handler) lane.handler = undefined; // a newer consumer of the lane keeps its own
        if (lane.running.size > 0) await new Promise<void>((resolve) => lane.idle.add(resolve));
      },
    };
  }

  async pending<P, R>(queue: QueueDefinition<P, R>): Promise<Array<PendingWork<P>>> {
    const lane = this.lane(queue.name);
    const work = (item: Item, state: PendingWork<P>['state']): PendingWork<P> => ({ id: item.id, payload: item.payload as P, state, queuedAt: item.queuedAt });
    return [...[...lane.running.values()].map((item) => work(item, 'active')), ...lane.waiting.map((item) => work(item, 'waiting'))]
      .sort((a, b) => a.queuedAt.getTime() - b.queuedAt.getTime());
  }

  async prometheusText(): Promise<string | null> {
    return null;
  }

  async jobCounts(queue: string): Promise<Record<string, number>> {
    const lane = this.lane(queue);
    return { waiting: lane.waiting.length, active: lane.running.size };
  }

  async discard<P, R>(queue: QueueDefinition<P, R>, id: string): Promise<boolean> {
    const lane = this.lane(queue.name);
    const item = lane.waiting.find((w) => w.id === id);
    if (!item) return false;
    lane.waiting = lane.waiting.filter((w) => w !== item);
    item.answer?.({ ok: false, error: { status: 503, detail: `the ${queue.name} request was dropped from the queue before a worker took it; try again` } });
    return true;
  }

  onStalled(): void {
    // Work here runs in this process: it cannot be left behind by another one.
  }

  async check(): Promise<void> {
    if (this.closed) throw new ServiceUnavailable('queue', 'the job queue is closed');
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      [...this.lanes.values()].map((lane) => {
        lane.handler = undefined;
        // Work that never started is gone with the queue (the rows re-add it); a request waiting on it is told so.
        for (const item of lane.waiting.splice(0)) item.answer?.({ ok: false, error: { status: 503, detail: 'the job queue closed before this request was answered; try again' } });
        return lane.running.size === 0 ? undefined : new Promise<void>((resolve) => lane.idle.add(resolve));
      }),
    );
  }

  /** `request`: where a request's outcome and reports go (the handler may report as soon as it is pumped). */
  private enqueue(queue: QueueDefinition<unknown, unknown>, payload: unknown, request?: Pick<Item, 'answer' | 'onReport'>): Item;
  private enqueue<P, R>(queue: QueueDefinition<P, R>, payload: P, request: Pick<Item, 'answer' | 'onReport'> = {}): Item {
    if (this.closed) throw new ServiceUnavailable('queue', `the job queue is closed; ${queue.name} work cannot be queued`);
    const item: Item = { id: randomUUID(), payload: queue.payload.parse(payload), queuedAt: new Date(), controller: new AbortController(), ...request };
    this.lane(queue.name).waiting.push(item);
    this.pump(queue.name);
    return item;
  }

  private lane(name: string): Lane {
    let lane = this.lanes.get(name);
    if (!lane) {
      lane = { waiting: [], running: new Map(), concurrency: 1, idle: new Set() };
      this.lanes.set(name, lane);
    }
    return lane;
  }

  private pump(name: string): void {
    const lane = this.lane(name);
    while (lane.handler && lane.running.size < lane.concurrency && lane.waiting.length > 0) {
      const item = lane.waiting.shift()!;
      const handler = lane.handler;
      lane.running.set(item.id, item);
      const report = (data: unknown) => deliverReport(item.onReport, data);
      void settle(() => handler(item.payload, { id: item.id, signal: item.controller.signal, report }))
        .then((outcome) => {
          delete item.onReport; // none after the result
          if (item.answer) item.answer(outcome);
          else if (!outcome.ok) this.onHandlerError(name, errorFromWire(outcome.error));
        })
        .finally(() => {
          lane.running.delete(item.id);
          if (lane.running.size === 0) for (const resolve of lane.idle) resolve();
          if (lane.running.size === 0) lane.idle.clear();
          this.pump(name);
        });
    }
  }
}
