// The job queue's contract, run against both drivers: the in-process queue, and BullMQ on the real Redis that
// test/servers/global-setup.ts starts once per run (each test has its own key prefix). A BullMQ test produces on
// one BullMqQueue and consumes on another, as an API process and a worker do; the BullMQ-only cases put the
// worker in a child process and kill it.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { AppError, Conflict, ServiceUnavailable, UnprocessableEntity } from '../src/errors.ts';
import { defineQueue, InProcessQueue, type JobQueue } from '../src/queue.ts';
import { BullMqQueue, isConnectionError, type BullMqQueueOptions } from '../src/queue-bullmq.ts';
import { freePort } from '../../../test/servers/servers.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CONSUMER_SCRIPT = fileURLToPath(new URL('./fixtures/bullmq-consumer.ts', import.meta.url));

const jobs = defineQueue('jobs', z.object({ jobId: z.string() }));
const numbers = defineQueue('numbers', z.object({ n: z.number() }), { result: z.number() });

const opened: JobQueue[] = [];
function track<Q extends JobQueue>(queue: Q): Q {
  opened.push(queue);
  return queue;
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((queue) => queue.close()));
});

function bullMqOptions(): BullMqQueueOptions {
  return { url: inject('servers').redisUrl, prefix: `test-queue-${randomBytes(6).toString('hex')}` };
}

interface Driver {
  name: string;
  /** A producing and a consuming queue on the same lanes (one queue for the in-process driver). */
  open(onHandlerError?: (queue: string, err: unknown) => void): { producer: JobQueue; consumer: JobQueue };
}

const drivers: Driver[] = [
  {
    name: 'InProcessQueue',
    open: (onHandlerError) => {
      const queue = track(new InProcessQueue(onHandlerError));
      return { producer: queue, consumer: queue };
    },
  },
  {
    name: 'BullMqQueue',
    open: (onHandlerError) => {
      const options = bullMqOptions();
      return { producer: track(new BullMqQueue(options)), consumer: track(new BullMqQueue({ ...options, onHandlerError })) };
    },
  },
];

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Resolves waits whose condition holds, each time the state they look at changes. */
function conditions(): { changed(): void; until(test: () => boolean): Promise<void> } {
  const waits = new Set<{ test: () => boolean; resolve: () => void }>();
  return {
    changed() {
      for (const wait of waits) if (wait.test()) waits.delete(wait) && wait.resolve();
    },
    until: (test) => (test() ? Promise.resolve() : new Promise((resolve) => waits.add({ test, resolve }))),
  };
}

/** The reason of the signal's abort, once it aborts. */
function abortOf(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}

describe.each(drivers)('$name', (driver) => {
  it('runs work in order, one at a time by default, added before and after the consumer starts', async () => {
    const { producer, consumer } = driver.open();
    for (const id of ['a', 'b', 'c']) await producer.add(jobs, { jobId: id });
    const seen: string[] = [];
    const all = deferred();
    let running = 0;
    let maxRunning = 0;
    consumer.process(jobs, async ({ jobId }) => {
      maxRunning = Math.max(maxRunning, ++running);
      await sleep(5); // a little work, so an overlap would show
      seen.push(jobId);
      running -= 1;
      if (seen.length === 4) all.resolve();
    });
    await producer.add(jobs, { jobId: 'd' });
    await all.promise;
    expect(seen).toEqual(['a', 'b', 'c', 'd']);
    expect(maxRunning).toBe(1);
  });

  it.each([
    { from: 'the queue definition', definition: 3, option: undefined, limit: 3 },
    { from: 'the consumer', definition: 1, option: 2, limit: 2 },
  ])('runs as many at once as $from says, and never more', async ({ definition, option, limit }) => {
    const { producer, consumer } = driver.open();
    const lane = defineQueue('wide', z.object({ jobId: z.string() }), { concurrency: definition });
    const gates: Array<() => void> = [];
    const state = conditions();
    let running = 0;
    let maxRunning = 0;
    let finished = 0;
    consumer.process(lane, async () => {
      maxRunning = Math.max(maxRunning, ++running);
      const gate = deferred();
      gates.push(gate.resolve);
      state.changed();
      await gate.promise;
      running -= 1;
      finished += 1;
      state.changed();
    }, option ? { concurrency: option } : {});
    const total = 2 * limit;
    for (let i = 0; i < total; i++) await producer.add(lane, { jobId: String(i) });
    // Each time the lane is full, one finishes and one more may start: at no point may more run at once.
    for (let released = 0; released < total; released++) {
      await state.until(() => gates.length >= Math.min(released + limit, total));
      gates[released]!();
      await state.until(() => finished > released);
    }
    expect(maxRunning).toBe(limit);
  });

  /** Consumes `jobs` with a handler that holds each piece of work until `gate` opens; `started` when one runs. */
  function blockingConsumer(consumer: JobQueue): { started: Promise<void>; gate: { resolve(): void } } {
    const started = deferred();
    const gate = deferred();
    consumer.process(jobs, async () => {
      started.resolve();
      await gate.promise;
    });
    return { started: started.promise, gate };
  }

  it('keeps lanes apart: work blocked on one lane does not hold up another', async () => {
    const { producer, consumer } = driver.open();
    const { started, gate } = blockingConsumer(consumer);
    consumer.process(numbers, async ({ n }) => n * 2);
    await producer.add(jobs, { jobId: 'slow' });
    await started;
    expect(await producer.request(numbers, { n: 21 })).toBe(42);
    gate.resolve();
  });

  it('lists pending work (active and waiting, oldest first) and discards what still waits', async () => {
    const { producer, consumer } = driver.open();
    const { started, gate } = blockingConsumer(consumer);
    await producer.add(jobs, { jobId: 'running' });
    await started;
    await producer.add(jobs, { jobId: 'waiting' });
    const listed = await producer.pending(jobs);
    expect(listed.map((w) => [w.payload.jobId, w.state])).toEqual([['running', 'active'], ['waiting', 'waiting']]);
    expect(await producer.discard(jobs, listed[0]!.id)).toBe(false); // taken by a worker: not ours to remove
    expect(await producer.discard(jobs, listed[1]!.id)).toBe(true);
    expect((await producer.pending(jobs)).map((w) => w.payload.jobId)).toEqual(['running']);
    gate.resolve();
  });

  it("answers a request with the handler's value", async () => {
    const { producer, consumer } = driver.open();
    const echo = defineQueue('echo', z.object({ text: z.string() }), { result: z.object({ text: z.string(), length: z.number() }) });
    consumer.process(echo, async ({ text }, { id }) => ({ text: `${text} (${typeof id})`, length: text.length }));
    expect(await producer.request(echo, { text: 'hello' })).toEqual({ text: 'hello (string)', length: 5 });
  });

  it("delivers a request's reports to its producer in order, all before the result, none after it", async () => {
    const { producer, consumer } = driver.open();
    const reporters: Array<(data: unknown) => void> = [];
    consumer.process(numbers, async ({ n }, { report }) => {
      reporters.push(report);
      for (let i = 0; i < n; i++) {
        report({ n, i });
        if (i % 10 === 0) await sleep(1); // reports from several turns of the event loop
      }
      return n;
    });
    const seen: unknown[] = [];
    const result = producer.request(numbers, { n: 40 }, { onReport: (data) => seen.push(data) });
    expect(await result).toBe(40);
    expect(seen).toEqual(Array.from({ length: 40 }, (_, i) => ({ n: 40, i })));
    reporters[0]!({ late: true }); // after its result: nobody may hear it
    const next: unknown[] = [];
    expect(await producer.request(numbers, { n: 1 }, { onReport: (data) => next.push(data) })).toBe(1);
    expect(next).toEqual([{ n: 1, i: 0 }]);
    expect(seen).toHaveLength(40);
  });

  it('keeps a failing report listener from failing the work or the requests after it', async () => {
    const { producer, consumer } = driver.open();
    consumer.process(numbers, async ({ n }, { report }) => {
      report('a');
      report('b');
      return n;
    });
    const broken = () => {
      throw new Error('listener broke');
    };
    expect(await producer.request(numbers, { n: 1 }, { onReport: broken })).toBe(1);
    const seen: unknown[] = [];
    expect(await producer.request(numbers, { n: 2 }, { onReport: (data) => seen.push(data) })).toBe(2);
    expect(seen).toEqual(['a', 'b']);
  });

  it("re-throws a handler's error on the producer side as the same kind of error", async () => {
    const { producer, consumer } = driver.open();
    const issues = [{ loc: ['body', 'split'], msg: 'split "test" not found', type: 'value_error' }];
    consumer.process(numbers, async ({ n }) => {
      if (n === 422) throw new UnprocessableEntity(issues);
      if (n === 409) throw new Conflict('job j1 is still running');
      throw new Error('disk full');
    });
    const invalid = await producer.request(numbers, { n: 422 }).catch((err: unknown) => err);
    expect(invalid).toBeInstanceOf(UnprocessableEntity);
    expect((invalid as UnprocessableEntity).issues).toEqual(issues);
    const conflict = await producer.request(numbers, { n: 409 }).catch((err: unknown) => err);
    expect(conflict).toBeInstanceOf(AppError);
    expect(conflict).toMatchObject({ statusCode: 409, message: 'job j1 is still running' });
    const fault = await producer.request(numbers, { n: 500 }).catch((err: unknown) => err);
    expect(fault).toBeInstanceOf(Error);
    expect(fault).not.toBeInstanceOf(AppError);
    expect((fault as Error).message).toContain('disk full');
  });

  it('refuses a payload that does not match the queue schema', async () => {
    const { producer } = driver.open();
    await expect(producer.add(jobs, { jobId: 7 } as unknown as { jobId: string })).rejects.toThrow();
    await expect(producer.request(numbers, { n: 'x' } as unknown as { n: number })).rejects.toThrow();
  });

  it('keeps a failing handler of added work from stopping the lane, and reports its error', async () => {
    const errors: unknown[] = [];
    const { producer, consumer } = driver.open((_queue, err) => errors.push(err));
    const seen = deferred<string>();
    consumer.process(jobs, async ({ jobId }) => {
      if (jobId === 'a') throw new Error('boom');
      seen.resolve(jobId);
    });
    for (const id of ['a', 'b']) await producer.add(jobs, { jobId: id });
    expect(await seen.promise).toBe('b');
    expect(errors).toHaveLength(1);
    expect(String(errors[0])).toContain('boom');
  });

  it('never runs a request that was aborted while it waited', async () => {
    const { producer, consumer } = driver.open();
    const ran: number[] = [];
    const started = deferred();
    const gate = deferred();
    consumer.process(numbers, async ({ n }) => {
      ran.push(n);
      if (n === 0) {
        started.resolve();
        await gate.promise;
      }
      return n;
    });
    const first = producer.request(numbers, { n: 0 });
    await started.promise;
    const controller = new AbortController();
    const aborted = producer.request(numbers, { n: 1 }, { signal: controller.signal });
    const reason = new Error('client gone');
    controller.abort(reason);
    await expect(aborted).rejects.toBe(reason);
    const third = producer.request(numbers, { n: 2 });
    gate.resolve();
    expect([await first, await third]).toEqual([0, 2]);
    expect(ran).toEqual([0, 2]); // one lane, in order: had 1 not been removed, it would have run before 2
  });

  it("aborts the handler's signal when its request is aborted while it runs", async () => {
    const { producer, consumer } = driver.open();
    const started = deferred();
    const seen = deferred<unknown>();
    consumer.process(numbers, async (_payload, { signal }) => {
      started.resolve();
      seen.resolve(await abortOf(signal));
      return 0;
    });
    const controller = new AbortController();
    const pending = producer.request(numbers, { n: 1 }, { signal: controller.signal });
    await started.promise;
    const reason = new Error('client gone');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(((await seen.promise) as Error).message).toBe('client gone');
  });

  it('closes a consumer only once its running handler has finished', async () => {
    const { producer, consumer } = driver.open();
    const started = deferred();
    const gate = deferred();
    const order: string[] = [];
    const lane = consumer.process(jobs, async () => {
      started.resolve();
      await gate.promise;
      order.push('handler finished');
    });
    await producer.add(jobs, { jobId: 'a' });
    await started.promise;
    const closed = lane.close().then(() => order.push('consumer closed'));
    // Nothing announces that close() is rightly still waiting, so it gets a moment to finish wrongly.
    await sleep(200);
    expect(order).toEqual([]);
    gate.resolve();
    await closed;
    expect(order).toEqual(['handler finished', 'consumer closed']);
  });

  it('fails a request still waiting for its turn when the producing queue closes', async () => {
    const { producer, consumer } = driver.open();
    const started = deferred();
    const gate = deferred();
    consumer.process(numbers, async ({ n }) => {
      started.resolve();
      await gate.promise;
      return n;
    });
    const running = producer.request(numbers, { n: 0 });
    running.catch(() => undefined); // its fate differs: the in-process queue finishes it, BullMQ stops listening
    const waiting = producer.request(numbers, { n: 1 }); // queued right behind the first, on a lane of one
    await started.promise;
    const closed = producer.close();
    await expect(waiting).rejects.toBeInstanceOf(ServiceUnavailable);
    gate.resolve();
    await closed;
  });

  it('refuses work once closed', async () => {
    const { producer } = driver.open();
    await producer.close();
    await expect(producer.add(jobs, { jobId: 'late' })).rejects.toBeInstanceOf(ServiceUnavailable);
    await expect(producer.request(numbers, { n: 2 })).rejects.toBeInstanceOf(ServiceUnavailable);
    await expect(producer.check()).rejects.toThrow();
    await producer.close(); // again: a no-op
  });
});

describe('BullMqQueue only', () => {
  it('fails a request whose worker process was killed, and never runs that work again', async () => {
    const options = { ...bullMqOptions(), lockDuration: 2000, stalledInterval: 1000 };
    const producer = track(new BullMqQueue(options));
    const child = spawn(process.execPath, ['--import', 'tsx', CONSUMER_SCRIPT, JSON.stringify({ ...options, queue: numbers.name })], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const taken = new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).on('line', (line) => line.startsWith('started ') && resolve(line.slice('started '.length)));
        child.once('exit', (code) => reject(new Error(`the consumer process exited (${code}) before it took the work`)));
      });
      const pending = producer.request(numbers, { n: 1 });
      pending.catch(() => undefined); // asserted below, once the worker is dead
      await taken;
      const killedAt = Date.now();
      child.kill('SIGKILL');
      await once(child, 'exit');
      await expect(pending).rejects.toBeInstanceOf(ServiceUnavailable);
      await expect(pending).rejects.toMatchObject({ dependency: 'worker', message: expect.stringMatching(/stopped before it answered.*try again/) });
      // Its lock runs out within lockDuration; the producer looks every stalledInterval.
      expect(Date.now() - killedAt).toBeLessThan(options.lockDuration + 2 * options.stalledInterval + 5000);

      // A worker started afterwards finds the dead one's work stalled and drops it without running it: news for its
      // stalled listeners (the rows decide what runs again), not an error of its own.
      const reported = deferred<unknown>();
      const rerun = deferred();
      const ran: number[] = [];
      const errors: unknown[] = [];
      const second = track(new BullMqQueue({ ...options, onHandlerError: (_queue, err) => errors.push(err) }));
      second.onStalled((queue, payload) => reported.resolve({ queue, payload }));
      second.process(numbers, async ({ n }) => {
        ran.push(n);
        if (n === 1) rerun.resolve();
        return n;
      });
      const dropped = await Promise.race([reported.promise, rerun.promise.then(() => "the killed worker's work ran again")]);
      expect(dropped).toEqual({ queue: numbers.name, payload: { n: 1 } });
      expect(await producer.request(numbers, { n: 2 })).toBe(2);
      expect(ran).toEqual([2]);
      expect(errors).toEqual([]);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('fails a request whose entry Redis lost (restarted without its data) instead of waiting for ever', async () => {
    const options = { ...bullMqOptions(), stalledInterval: 500 };
    const producer = track(new BullMqQueue(options));
    const pending = producer.request(numbers, { n: 1 });
    pending.catch(() => undefined); // asserted below
    const redis = new Redis(options.url);
    try {
      let keys: string[] = [];
      while (keys.length === 0) keys = (await redis.keys(`${options.prefix}:${numbers.name}:*`)).filter((k) => /:[0-9a-f-]{36}$/.test(k));
      await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
    await expect(pending).rejects.toMatchObject({ dependency: 'queue', message: expect.stringMatching(/lost by the queue.*try again/) });
  });

  it('lets work whose entry Redis lost while it ran finish, and says so as a lost lock naming the work, not as a handler error', async () => {
    // #40: after Redis lost its data, workers logged "job handler failed" / "could not renew lock for job 1" at error
    // level for jobs that went on to complete.
    const options = { ...bullMqOptions(), lockDuration: 1000 };
    const errors: unknown[] = [];
    const lost: Array<{ queue: string; id: string; ids: Record<string, string>; what: string }> = [];
    const changes = conditions();
    const producer = track(new BullMqQueue(options));
    const consumer = track(new BullMqQueue({ ...options, onHandlerError: (_queue, err) => errors.push(err), onLockLost: (queue, work, what) => (lost.push({ queue, ...work, what }), changes.changed()) }));
    const started = deferred();
    const release = deferred();
    const finished: string[] = [];
    consumer.process(jobs, async ({ jobId }) => {
      started.resolve();
      await release.promise;
      finished.push(jobId);
      changes.changed();
    });
    await producer.add(jobs, { jobId: 'job_lost' });
    await started.promise;
    const redis = new Redis(options.url);
    try {
      await redis.del(...(await redis.keys(`${options.prefix}:*`)));
    } finally {
      redis.disconnect();
    }
    try {
      await changes.until(() => lost.length > 0); // the next renewal, within lockDuration / 2
    } finally {
      release.resolve(); // a failure here must not leave the handler holding the consumer's close
    }
    await changes.until(() => finished.length === 1 && lost.some((l) => /moveToFinished/.test(l.what)));
    expect(lost[0]).toMatchObject({ queue: 'jobs', ids: { jobId: 'job_lost' }, what: expect.stringMatching(/could not renew lock/) });
    expect(new Set(lost.map((l) => l.id)).size).toBe(1);
    expect(lost.every((l) => l.ids['jobId'] === 'job_lost')).toBe(true);
    expect(errors).toEqual([]);
  });

  it('counts a connection reset mid-command (a Redis restart) as a lost connection, not a handler error (#56)', async () => {
    // The error exactly as Node raises it: a peer that resets the connection under a write.
    const server = net.createServer((socket) => socket.resetAndDestroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const reset = await new Promise<Error>((resolve) => {
      const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1', () => {
        const write = () => client.writable && client.write('PING\r\n', () => setTimeout(write, 5));
        write();
      });
      client.on('error', resolve);
    });
    server.close();
    expect((reset as NodeJS.ErrnoException).code).toBe('ECONNRESET');
    expect(isConnectionError(reset)).toBe(true);
    expect(isConnectionError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isConnectionError(new Error('the handler failed'))).toBe(false);
  });

  it('answers 503 quickly when Redis is out of reach, without showing its password', async () => {
    const url = `redis://worker:s3cret-pw@127.0.0.1:${await freePort()}`;
    const queue = track(new BullMqQueue({ url, prefix: 'unreachable' }));
    const startedAt = Date.now();
    const failures = [
      await queue.add(jobs, { jobId: 'a' }).catch((err: unknown) => err),
      await queue.request(numbers, { n: 1 }).catch((err: unknown) => err),
      await queue.check().catch((err: unknown) => err),
    ];
    expect(Date.now() - startedAt).toBeLessThan(5000);
    for (const failure of failures) {
      expect(failure).toBeInstanceOf(ServiceUnavailable);
      expect((failure as Error).message).toMatch(/^Redis at redis:\/\/127\.0\.0\.1:\d+ /);
      expect((failure as Error).message).not.toContain('s3cret');
    }
  });
});
