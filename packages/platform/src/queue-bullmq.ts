// The BullMQ-on-Redis driver of the job queue (scaled out): API processes produce, workers on any machine that
// reaches Redis consume. queue.ts is the contract; this file maps it onto BullMQ's Redis backend.
//
// Settings, chosen deliberately:
// - attempts 1, no backoff: BullMQ never retries. Handler errors travel as data (settle), so a BullMQ failure is a
//   worker fault, and a retry could re-run hours of GPU work; the database rows decide what is queued again.
// - maxStalledCount 0, maxStartedAttempts 1: work whose worker died (its lock expired) never runs again. BullMQ 6
//   does not fail stalled work at once: its stalled checker marks it (`defa`) and puts it back in wait; the next
//   worker to fetch it fails it unrun (moveStalledJobsToWait-9.lua, Worker.getUnrecoverableErrorMessage). Only
//   Workers look for stalls, and the dead one may have been its lane's only one, so a producer also checks the
//   requests it waits on (checkWaitingRequests).
// - lockDuration 30 s (renewed every 15 s), stalledInterval 30 s; options, so tests shorten them. A request whose
//   worker died fails within about lockDuration + stalledInterval.
// - removeOnComplete {1 h, 100}, removeOnFail {24 h, 1000}, event stream ~1000 entries: payloads hold conversations
//   and results model outputs, so finished work is kept briefly (age is only enforced when a later job finishes,
//   hence the counts). Job.waitUntilFinished is not used: without a ttl it waits forever for a completion its
//   QueueEvents missed, reports a job already removed on completion as failed ("Missing key"), and keeps its
//   listeners until the job ends, which removed (cancelled) work never does. A request's outcome comes from its
//   `completed` event, read by a QueueEvents that starts from the stream's last id taken before the first add,
//   not from '$' (fixed only when its first XREAD runs, after waitUntilReady() resolved: a completion in between
//   would be missed); and, should the event be lost anyway, from the job itself (checkWaitingRequests).
// - Connections (ioredis): the producers' one fails fast (no offline queue, no retry, 5 s connect and command
//   timeouts) so an API answers 503 at once when Redis is down. Workers, QueueEvents and the cancel subscriber
//   block (BZPOPMIN, XREAD, SUBSCRIBE) and wait an outage out; BullMQ requires maxRetriesPerRequest null there.
//   Reconnection: 250 ms doubling to 5 s, forever: a worker comes back when Redis does.
import { randomUUID } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { isNotConnectionError, Queue, QueueEvents, Worker, type Job, type KeepJobs } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import { ServiceUnavailable } from './errors.ts';
import { deliverReport, errorFromWire, settle, unwrap, type Consumer, type JobHandler, type JobQueue, type Outcome, type PendingWork, type QueueDefinition, type RequestOptions } from './queue.ts';

export interface BullMqQueueOptions {
  url: string;
  /** Prefix of every key and channel this queue uses in Redis. */
  prefix: string;
  onHandlerError?: (queue: string, err: unknown) => void;
  /** Told when the queue lost its claim on work this process runs (Redis restarted without its data, or was out of
   *  reach longer than a lock lasts): the work goes on, and its row, not the queue, says how it ends. `ids` are the
   *  payload's ids (`jobId`, …), `what` BullMQ's words. Without it, such a loss is a handler error. */
  onLockLost?: (queue: string, work: { id: string; ids: Record<string, string> }, what: string) => void;
  /** How long (ms) a worker's claim on running work lasts unless renewed (at half). Default 30 000. */
  lockDuration?: number;
  /** How often (ms) work whose worker stopped is looked for. Default 30 000. */
  stalledInterval?: number;
  /** Told of each attempt to reach Redis again after the connection that takes work (a worker's) was lost, and of
   *  the moment it is back: the commands sent meanwhile (lock renewals, fetches) wait and go then. */
  onReconnecting?: (attempt: number, reason: string) => void;
  onReconnected?: () => void;
  /** Told when a lane's worker lost its connection to Redis mid-command (a Redis restart): news, not a handler's
   *  failure; the connection is made again and the work goes on. */
  onConnectionLost?: (queue: string, reason: string) => void;
}

/** Errors of a connection to Redis that went away, not of the work. BullMQ's isNotConnectionError knows a refused
 *  connection and a closed one; a Redis restart also cuts commands in flight (`write ECONNRESET`, a broken pipe), which
 *  it counts as other errors (seen in the soak of #56: error-level "job handler failed" lines for work that completed). */
const CONNECTION_LOST = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTCONN', 'ECONNABORTED']);
export function isConnectionError(err: Error): boolean {
  return !isNotConnectionError(err) || CONNECTION_LOST.has((err as NodeJS.ErrnoException).code ?? '');
}

const KEEP_COMPLETED: KeepJobs = { age: 3600, count: 100 };
const KEEP_FAILED: KeepJobs = { age: 24 * 3600, count: 1000 };
const TIMEOUT_MS = 5000;
/** How long a cancel that arrived before its work started is remembered. */
const CANCEL_MEMORY_MS = 10 * 60_000;
/** Job names: a request's outcome goes back to its producer; added work only reports its failures. */
const ADD = 'add';
const REQUEST = 'request';

const reconnectDelay = (times: number) => Math.min(250 * 2 ** (times - 1), 5000);
const FAIL_FAST: RedisOptions = { enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: TIMEOUT_MS, commandTimeout: TIMEOUT_MS, retryStrategy: reconnectDelay };
const BLOCKING: RedisOptions = { maxRetriesPerRequest: null, connectTimeout: TIMEOUT_MS, retryStrategy: reconnectDelay };

const ignore = () => undefined;

/** How a request's wait ends: the job's outcome as BullMQ reports it (in an event, or read from the job). */
interface Settlers {
  completed(args: { returnvalue: unknown }): void;
  failed(args: { failedReason: string }): void;
  stalled(): void;
  /** Redis no longer has the job (restarted without its data, flushed): nobody will run it. */
  lost(): void;
}

/** BullMQ's states of work that is not finished, as PendingWork sees them. */
const WAITING_STATES = ['waiting', 'prioritized', 'delayed', 'paused', 'waiting-children'] as const;

/** A job's progress as this driver writes it: the reports made since the last progress was written. */
interface ProgressData {
  reports: unknown[];
}

/** A request's reports as its job's progress events, in order. While one is being written the next ones gather
 *  and go as one (a stream entry per Redis round trip at most, however fast the handler reports); a write that
 *  fails drops its reports, never the work. close() stops taking reports and waits for those taken. */
function progressReports(job: Job): { report(data: unknown): void; close(): Promise<void> } {
  let gathered: unknown[] = [];
  let written = Promise.resolve();
  let open = true;
  const write = async () => {
    const progress: ProgressData = { reports: gathered };
    gathered = [];
    await job.updateProgress(progress).catch(ignore);
  };
  return {
    report(data) {
      if (!open) return;
      gathered.push(data);
      if (gathered.length === 1) written = written.then(write);
    },
    close() {
      open = false;
      return written;
    },
  };
}

/** The work whose lock BullMQ's error says was lost: renewing it, or finishing it (its last word on that work). */
function lostLock(err: Error): { id: string; finishing: boolean } | null {
  const renewing = /^could not renew lock for job (\S+)$/.exec(err.message);
  if (renewing) return { id: renewing[1]!, finishing: false };
  const finishing = /^Missing (?:lock|key) for job (\S+?)\. moveToFinished/.exec(err.message);
  return finishing ? { id: finishing[1]!.slice(finishing[1]!.lastIndexOf(':') + 1), finishing: true } : null;
}

/** A payload's ids (`jobId`, `exportId`, …): what a log line may name of it (bodies may hold users' text). */
function payloadIds(data: unknown): Record<string, string> {
  if (!data || typeof data !== 'object') return {};
  return Object.fromEntries(Object.entries(data).filter((entry): entry is [string, string] => /Id$/.test(entry[0]) && typeof entry[1] === 'string'));
}

function stopped(queue: string, why: string): ServiceUnavailable {
  return new ServiceUnavailable('worker', `the worker running this ${queue} request stopped before it answered (${why}); try again`);
}

export class BullMqQueue implements JobQueue {
  readonly durable = true;
  /** Producers' connection (fails fast); the one Workers and QueueEvents share or copy (blocks); cancels. */
  private readonly redis: Redis;
  private blockingRedis?: Redis;
  private subscriber?: { redis: Redis; ready: Promise<unknown> };
  private readonly queues = new Map<string, Promise<Queue>>();
  private readonly events = new Map<string, Promise<QueueEvents>>();
  private readonly workers = new Map<string, Worker>();
  /** Requests this process waits on, by job id: where, and what ends the wait. */
  private readonly waiting = new Map<string, { queue: Queue; settle: Settlers; fail(err: unknown): void; added: boolean }>();
  private readonly stalledListeners = new Set<(queue: string, payload: unknown) => void>();
  /** Handlers at work in this process, and cancels that came before their work started, by `queue/id`. */
  private readonly running = new Map<string, AbortController>();
  private readonly cancelledEarly = new Map<string, number>();
  /** The ids in the payload of work this process took, by `queue/id`, until BullMQ has finished with it. */
  private readonly taken = new Map<string, Record<string, string>>();
  private stallTimer?: NodeJS.Timeout;
  private closing?: Promise<void>;
  private lastError?: Error;
  /** "Redis at <url without credentials>", for messages; the password, to keep it out of them. */
  private readonly where: string;
  private readonly password: string;
  private readonly channel: string;

  constructor(private readonly options: BullMqQueueOptions) {
    const url = new URL(options.url);
    this.password = decodeURIComponent(url.password);
    url.username = url.password = '';
    this.where = `Redis at ${url.toString().replace(/\/$/, '')}`;
    this.channel = `${options.prefix}:cancel`;
    this.redis = this.connect(FAIL_FAST);
  }

  async add<P>(queue: QueueDefinition<P, void>, payload: P): Promise<void> {
    const data = queue.payload.parse(payload);
    const producer = await this.producerFor(queue.name);
    await producer.add(ADD, data).catch((err) => {
      throw this.unavailable(`did not take ${queue.name} work`, err);
    });
  }

  async request<P, R>(queue: QueueDefinition<P, R>, payload: P, options: RequestOptions = {}): Promise<R> {
    const data = queue.payload.parse(payload);
    const signal = options.signal;
    if (signal?.aborted) throw signal.reason;
    const producer = await this.producerFor(queue.name);
    const events: EventEmitter = await this.eventsFor(producer);
    const id = randomUUID();
    return new Promise<R>((resolve, reject) => {
      /** Stops waiting; false when something else already ended the wait. */
      const detach = (): boolean => {
        if (!this.waiting.delete(id)) return false;
        for (const [event, listener] of Object.entries(listeners)) events.off(`${event}:${id}`, listener);
        events.off(`progress:${id}`, onProgress);
        signal?.removeEventListener('abort', onAbort);
        return true;
      };
      const finish = (outcome: () => R): void => {
        if (!detach()) return;
        try {
          resolve(outcome());
        } catch (err) {
          reject(err);
        }
      };
      const fail = (err: unknown) => finish(() => { throw err; });
      const listeners: Settlers = {
        completed: (args) => finish(() => unwrap(args.returnvalue as Outcome<R>)),
        failed: (args) => fail(stopped(queue.name, args.failedReason)),
        stalled: () => fail(stopped(queue.name, 'it no longer renews its lock')),
        lost: () => fail(new ServiceUnavailable('queue', `the ${queue.name} request was lost by the queue (${this.where} restarted without its data?) before it was answered; try again`)),
      };
      const onProgress = (args: { data: unknown }) => {
        for (const report of (args.data as Partial<ProgressData> | null)?.reports ?? []) deliverReport(options.onReport, report);
      };
      const waiter = { queue: producer, settle: listeners, fail, added: false };
      this.waiting.set(id, waiter);
      for (const [event, listener] of Object.entries(listeners)) events.on(`${event}:${id}`, listener);
      if (options.onReport) events.on(`progress:${id}`, onProgress);
      const added = producer.add(REQUEST, data, { jobId: id }).then(() => void (waiter.added = true), (err) => fail(this.unavailable(`did not take ${queue.name} work`, err)));
      // Deaf to the work's outcome at once; cancelled once the add went through, so a removal cannot run ahead of it.
      const onAbort = () => {
        if (detach()) void added.then(() => this.cancel(producer, id, signal!.reason)).finally(() => reject(signal!.reason));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      if (signal?.aborted) onAbort(); // while the producer was being opened
      if (this.closing) fail(this.closed(queue.name));
      this.stallTimer ??= setInterval(() => void this.checkWaitingRequests(), this.options.stalledInterval ?? 30_000).unref();
    });
  }

  process<P, R>(queue: QueueDefinition<P, R>, handler: JobHandler<P, R>, options: { concurrency?: number } = {}): Consumer {
    if (this.closing) throw this.closed(queue.name);
    if (this.workers.has(queue.name)) throw new Error(`queue ${queue.name} already has a consumer in this process`);
    const worker = new Worker(queue.name, (job: Job) => this.work(queue, handler, job), {
      connection: this.blocking(),
      prefix: this.options.prefix,
      autorun: false,
      concurrency: Math.max(1, options.concurrency ?? queue.concurrency),
      lockDuration: this.options.lockDuration ?? 30_000,
      stalledInterval: this.options.stalledInterval ?? 30_000,
      maxStalledCount: 0,
      maxStartedAttempts: 1,
      removeOnComplete: KEEP_COMPLETED,
      removeOnFail: KEEP_FAILED,
    });
    const report = this.options.onHandlerError ?? ignore;
    worker.on('error', (err) => {
      const lost = lostLock(err);
      if (lost && this.options.onLockLost) {
        const key = `${queue.name}/${lost.id}`;
        this.options.onLockLost(queue.name, { id: lost.id, ids: this.taken.get(key) ?? {} }, err.message);
        if (lost.finishing) this.taken.delete(key);
      } else if (isConnectionError(err)) this.options.onConnectionLost?.(queue.name, err.message);
      else report(queue.name, err);
    });
    worker.on('completed', (job) => this.taken.delete(`${queue.name}/${job.id}`));
    worker.on('failed', (job, err) => {
      if (job) this.taken.delete(`${queue.name}/${job.id}`);
      // A stopped worker's work, failed unrun by the worker that found it stalled: the rows decide what runs again.
      if (job && /stalled/i.test(err.message)) for (const listener of this.stalledListeners) listener(queue.name, job.data);
      else report(queue.name, new Error(`${queue.name} work ${job?.id} was failed by the queue: ${err.message}`));
    });
    this.workers.set(queue.name, worker);
    // Work is taken only once cancels can be heard.
    void this.listenForCancels().then(() => worker.run()).catch((err) => report(queue.name, err));
    let closing: Promise<void> | undefined;
    const forget = () => this.workers.get(queue.name) === worker && this.workers.delete(queue.name);
    return { close: () => (closing ??= worker.close().finally(forget)) };
  }

  async pending<P, R>(queue: QueueDefinition<P, R>): Promise<Array<PendingWork<P>>> {
    const producer = await this.producerFor(queue.name);
    const read = async (states: readonly string[], state: PendingWork<P>['state']): Promise<Array<PendingWork<P>>> => {
      const jobs = await producer.getJobs([...states] as Parameters<Queue['getJobs']>[0], 0, -1, true).catch((err) => {
        throw this.unavailable(`did not list the ${queue.name} queue`, err);
      });
      return jobs.flatMap((job) => {
        const payload = job ? queue.payload.safeParse(job.data) : undefined;
        return job?.id && payload?.success ? [{ id: job.id, payload: payload.data, state, queuedAt: new Date(job.timestamp) }] : [];
      });
    };
    const [active, waiting] = await Promise.all([read(['active'], 'active'), read(WAITING_STATES, 'waiting')]);
    return [...active, ...waiting].sort((a, b) => a.queuedAt.getTime() - b.queuedAt.getTime());
  }

  async prometheusText(queues: readonly string[]): Promise<string | null> {
    const texts = await Promise.all(queues.map(async (name) => (await this.producerFor(name)).exportPrometheusMetrics().catch((err) => {
      throw this.unavailable(`did not export the metrics of the ${name} queue`, err);
    })));
    return mergeExpositions(texts);
  }

  async jobCounts(queue: string): Promise<Record<string, number>> {
    const producer = await this.producerFor(queue);
    return producer.getJobCounts().catch((err) => {
      throw this.unavailable(`did not count the ${queue} queue`, err);
    });
  }

  async discard<P, R>(queue: QueueDefinition<P, R>, id: string): Promise<boolean> {
    const producer = await this.producerFor(queue.name);
    const job = await producer.getJob(id);
    if (!job || !(WAITING_STATES as readonly string[]).includes(await job.getState())) return false;
    // A job a worker took meanwhile is locked, and BullMQ refuses to remove it. A producer still waiting on a removed
    // request finds it gone (checkWaitingRequests).
    return job.remove().then(() => true, () => false);
  }

  onStalled(listener: (queue: string, payload: unknown) => void): void {
    this.stalledListeners.add(listener);
  }

  async check(): Promise<void> {
    if (this.closing) throw new ServiceUnavailable('queue', 'the job queue is closed');
    await this.connected().then(() => this.redis.ping()).catch((err) => {
      throw this.unavailable('does not answer', err);
    });
  }

  close(): Promise<void> {
    return (this.closing ??= this.shutdown());
  }

  private async shutdown(): Promise<void> {
    for (const { fail } of this.waiting.values()) fail(new ServiceUnavailable('queue', 'the job queue closed before this request was answered; try again'));
    clearInterval(this.stallTimer);
    await Promise.allSettled([...this.workers.values()].map((worker) => worker.close()));
    await Promise.allSettled([...this.queues.values(), ...this.events.values()].map(async (opened) => (await opened).close()));
    await this.subscriber?.ready.catch(ignore);
    // Every BullMQ object is closed: nothing of ours is in flight on these connections.
    for (const redis of [this.redis, this.blockingRedis, this.subscriber?.redis]) redis?.disconnect();
  }

  /** Runs one piece of work in this process; its outcome is the job's return value. */
  private async work<P, R>(queue: QueueDefinition<P, R>, handler: JobHandler<P, R>, job: Job): Promise<Outcome<R> | null> {
    const key = `${queue.name}/${job.id}`;
    if (this.cancelledEarly.delete(key)) return null; // its producer gave up before it started
    const controller = new AbortController();
    this.running.set(key, controller);
    this.taken.set(key, payloadIds(job.data));
    const reports = job.name === REQUEST ? progressReports(job) : undefined;
    try {
      const outcome = await settle(() => handler(queue.payload.parse(job.data), { id: job.id!, signal: controller.signal, report: reports?.report ?? ignore }));
      // Written before the outcome, so its `completed` event follows them in the stream.
      await reports?.close();
      if (job.name === REQUEST) return outcome;
      if (!outcome.ok) this.options.onHandlerError?.(queue.name, errorFromWire(outcome.error));
      return null;
    } finally {
      this.running.delete(key);
    }
  }

  /** Removes the work if it still waits, and tells every consumer to abort it if it runs: BullMQ's own
   *  Worker.cancelJob reaches one Worker in one process. */
  private async cancel(producer: Queue, id: string, reason: unknown): Promise<void> {
    const { name, message } = reason instanceof Error ? reason : { name: 'AbortError', message: String(reason) };
    const notice = JSON.stringify({ key: `${producer.name}/${id}`, name, message });
    await Promise.allSettled([this.redis.publish(this.channel, notice), producer.remove(id)]);
  }

  private listenForCancels(): Promise<unknown> {
    if (this.subscriber) return this.subscriber.ready;
    const redis = this.connect(BLOCKING);
    redis.on('message', (_channel: string, notice: string) => {
      const { key, name, message } = JSON.parse(notice) as { key: string; name: string; message: string };
      const controller = this.running.get(key);
      if (controller) return controller.abort(Object.assign(new Error(message), { name }));
      // The work may be between BullMQ's fetch and its handler: remembered, it is skipped when it starts.
      const now = Date.now();
      for (const [old, at] of this.cancelledEarly) if (at < now - CANCEL_MEMORY_MS) this.cancelledEarly.delete(old);
      if (this.workers.has(key.slice(0, key.indexOf('/')))) this.cancelledEarly.set(key, now);
    });
    this.subscriber = { redis, ready: redis.subscribe(this.channel) };
    return this.subscriber.ready;
  }

  /** Every stalledInterval, what became of each request this process waits on, read from its job: BullMQ's test
   *  for stalled work (started, not finished, lock gone), which no Worker may be left to run, an outcome whose
   *  event was missed (trimmed from the stream while this process was cut off), and a job Redis no longer has. */
  private async checkWaitingRequests(): Promise<void> {
    const waiters = [...this.waiting].filter(([, w]) => w.added);
    const pipeline = this.redis.pipeline();
    for (const [id, { queue }] of waiters) pipeline.hmget(queue.toKey(id), 'processedOn', 'finishedOn', 'returnvalue', 'failedReason').exists(`${queue.toKey(id)}:lock`).exists(queue.toKey(id));
    const replies = waiters.length > 0 ? await pipeline.exec().catch(() => null) : null; // Redis down: next round
    if (!replies) return;
    waiters.forEach(([, { settle }], i) => {
      const [started, finished, returnvalue, failedReason] = (replies[3 * i]?.[1] ?? []) as Array<string | null>;
      if (failedReason) settle.failed({ failedReason });
      else if (finished) settle.completed({ returnvalue: JSON.parse(returnvalue ?? 'null') });
      else if (replies[3 * i + 2]?.[1] === 0) settle.lost();
      else if (started && replies[3 * i + 1]?.[1] === 0) settle.stalled();
    });
  }

  private async producerFor(name: string): Promise<Queue> {
    await this.connected().catch((err) => {
      throw this.closing ? this.closed(name) : this.unavailable(`cannot be reached, so ${name} work was not queued`, err);
    });
    if (this.closing) throw this.closed(name);
    let queue = this.queues.get(name);
    if (!queue) {
      const created = new Queue(name, { connection: this.redis, prefix: this.options.prefix, defaultJobOptions: { attempts: 1, removeOnComplete: KEEP_COMPLETED, removeOnFail: KEEP_FAILED }, streams: { events: { maxLen: 1000 } } });
      created.on('error', ignore); // the connection's own errors, which connected() reports
      // A BullMQ connection initialises once (RedisConnection.init): if that fails (Redis went down at that moment,
      // and this connection does not wait), the Queue stays broken for good, so it is dropped for a new one.
      queue = created.waitUntilReady().then(
        () => created,
        (err) => {
          this.queues.delete(name);
          void created.close().catch(ignore);
          throw this.unavailable(`did not open the ${name} queue`, err);
        },
      );
      this.queues.set(name, queue);
    }
    return queue;
  }

  private eventsFor(producer: Queue): Promise<QueueEvents> {
    if (this.closing) return Promise.reject(this.closed(producer.name));
    let events = this.events.get(producer.name);
    if (!events) {
      events = this.redis.xrevrange(producer.keys.events!, '+', '-', 'COUNT', 1).then(
        ([last]) => new QueueEvents(producer.name, { connection: this.blocking(), prefix: this.options.prefix, lastEventId: last?.[0] ?? '0-0' }).on('error', ignore),
        (err) => {
          this.events.delete(producer.name);
          throw this.unavailable(`did not answer for the ${producer.name} queue`, err);
        },
      );
      this.events.set(producer.name, events);
    }
    return events;
  }

  /** Resolves once the producers' connection is ready; while Redis is down, fails at once. */
  private connected(): Promise<void> {
    const redis = this.redis;
    if (this.closing) return Promise.reject(new Error('the job queue is closed'));
    if (redis.status === 'ready') return Promise.resolve();
    if (!['wait', 'connecting', 'connect'].includes(redis.status)) return Promise.reject(this.lastError ?? new Error(`the connection is ${redis.status}`));
    return new Promise((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(timer);
        redis.off('ready', done).off('error', done).off('end', done);
        if (err || redis.status !== 'ready') reject(err ?? new Error('the connection was closed'));
        else resolve();
      };
      const timer = setTimeout(() => done(new Error(`no connection within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
      redis.once('ready', done).once('error', done).once('end', done);
    });
  }

  private blocking(): Redis {
    if (this.blockingRedis) return this.blockingRedis;
    const redis = this.connect(BLOCKING);
    let attempts = 0;
    redis.on('reconnecting', () => this.options.onReconnecting?.(++attempts, this.lastError?.message ?? 'connection closed'));
    redis.on('ready', () => {
      if (attempts > 0) this.options.onReconnected?.();
      attempts = 0;
    });
    return (this.blockingRedis = redis);
  }

  private connect(options: RedisOptions): Redis {
    return new Redis(this.options.url, options).on('error', (err: Error) => (this.lastError = err));
  }

  private closed(name: string): ServiceUnavailable {
    return new ServiceUnavailable('queue', `the job queue is closed; ${name} work cannot be queued`);
  }

  private unavailable(what: string, err: unknown): ServiceUnavailable {
    if (err instanceof ServiceUnavailable) return err;
    const text = `${this.where} ${what}: ${err instanceof Error ? err.message : String(err)}`;
    return new ServiceUnavailable('queue', this.password ? text.split(this.password).join('[redacted]') : text);
  }
}

/** Prometheus texts of the same metrics (one per queue, each with its own `# HELP` and `# TYPE` lines) as one text:
 *  the format wants each metric's lines together under one HELP and one TYPE, which concatenation would break. */
export function mergeExpositions(texts: readonly string[]): string {
  const families = new Map<string, { help?: string; type?: string; samples: string[] }>();
  const family = (name: string) => families.get(name) ?? families.set(name, { samples: [] }).get(name)!;
  for (const line of texts.flatMap((text) => text.split('\n'))) {
    const comment = /^# (HELP|TYPE) (\S+) /.exec(line);
    if (comment) {
      const entry = family(comment[2]!);
      if (comment[1] === 'HELP') entry.help ??= line;
      else entry.type ??= line;
    } else if (line.trim() !== '') {
      family(/^[^{\s]+/.exec(line)![0]).samples.push(line);
    }
  }
  return [...families.values()].flatMap((f) => [f.help, f.type, ...f.samples].filter((l): l is string => l !== undefined)).join('\n') + '\n';
}
