// One mechanism for the child processes the worker asks things of (#58): the warm ML core (JSON lines over stdio),
// llama.cpp's engine and probe processes and the ONNX check (forked TypeScript files, Node IPC). Apart from the worker
// so that a native abort or an out-of-memory kill ends the child, and the parent tells its requests why and goes on.
import { fork, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';

/** tsx's loader (its package's one export), by path, looked up when a file is forked (the core's client alone forks none). */
const tsx = () => pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const STDERR_TAIL = 20;

/** How a child ended: its exit, or, with no process ever, the error it could not start with. */
export interface ChildEnd {
  code: number | null;
  signal: NodeJS.Signals | null;
  startError?: Error;
}

/** A started child over one transport. */
export interface ChildLink<Out, In> {
  readonly child: ChildProcess;
  /** The last lines it wrote to stderr, for the reason it ends with. */
  readonly stderr: string[];
  /** Settles once, when it has ended and its stderr has been read. */
  readonly ended: Promise<ChildEnd>;
  onMessage(listener: (message: In) => void): void;
  /** `failed` hears of a message a still-connected child could not be sent (a dead one's end says why instead). */
  send(message: Out, failed?: (err: Error) => void): void;
  /** Closes the channel requests come on: the child exits when it closes. */
  hangUp(): void;
}

/** How a child process ended, in words. */
export const ending = ({ code, signal }: ChildEnd): string => (signal ? `was killed by ${signal}` : `exited with code ${code}`);

/** The last lines the child wrote to stderr, for a message. */
export function why(stderr: readonly string[]): string {
  const tail = stderr.filter((line) => line.trim() !== '').slice(-3);
  return tail.length ? `: ${tail.join(' | ')}` : '';
}

/** Settles once the child has exited and its stderr has been read: at its 'close', or 200 ms after its 'exit' (a
 *  process it started may hold the pipe open, and then 'close' never comes); at once when it could not start. */
function endOf(child: ChildProcess): Promise<ChildEnd> {
  return new Promise((resolve) => {
    // Kept for the child's life: an 'error' nobody listens to (a message to a closed channel) would throw here.
    child.on('error', (startError) => {
      if (child.pid === undefined) resolve({ code: null, signal: null, startError });
    });
    child.once('close', (code, signal) => resolve({ code, signal }));
    child.once('exit', (code, signal) => setTimeout(() => resolve({ code, signal }), 200).unref());
  });
}

/** The last non-empty lines of a child's stderr, kept as they come; `onLine` hears every line. */
export function keepTail(stream: Readable, onLine?: (line: string) => void): string[] {
  const tail: string[] = [];
  createInterface({ input: stream }).on('line', (line) => {
    onLine?.(line);
    if (line.trim() === '') return;
    tail.push(line);
    if (tail.length > STDERR_TAIL) tail.shift();
  });
  return tail;
}

/** Node IPC: `file` (TypeScript, under tsx's loader whatever runs this process) forked with `args`. */
export function forkTypeScript<Out = never, In = unknown>(file: string, args: string[]): ChildLink<Out, In> {
  const child = fork(file, args, { execArgv: ['--import', tsx()], stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  return {
    child,
    stderr: keepTail(child.stderr!),
    ended: endOf(child),
    onMessage: (listener) => child.on('message', listener as (message: unknown) => void),
    send: (message, failed) => child.send(message as object, (err) => err && child.connected && failed?.(err)),
    hangUp: () => child.connected && child.disconnect(),
  };
}

/** JSON lines over stdio: requests on the child's stdin, its messages on stdout, each non-empty line read by `parse`
 *  (undefined: not a message). `stderr` is the tail its starter keeps. */
export function jsonLines<Out, In>(child: ChildProcessWithoutNullStreams, stderr: string[], parse: (line: string) => In | undefined): ChildLink<Out, In> {
  const listeners: Array<(message: In) => void> = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    const message = line.trim() === '' ? undefined : parse(line);
    if (message !== undefined) for (const listener of listeners) listener(message);
  });
  child.stdin.on('error', () => undefined); // EPIPE when the child died; its end reports it
  return {
    child,
    stderr,
    ended: endOf(child),
    onMessage: (listener) => listeners.push(listener),
    send: (message) => child.stdin.writable && child.stdin.write(`${JSON.stringify(message)}\n`),
    hangUp: () => child.stdin.end(),
  };
}

/** A request the child is asked, while its answer is awaited. */
export interface Held<S, A> {
  readonly id: string;
  /** What its asker keeps with it. */
  readonly state: S;
  /** Whether the child now running has it (false again while it waits to go to a new one). */
  readonly sent: boolean;
  /** False once it is answered or failed. */
  readonly waiting: boolean;
  resolve(answer: A): void;
  reject(error: Error): void;
}

export interface SupervisedChildOptions<Out, In, S, A> {
  start(): ChildLink<Out, In>;
  /** The child's message that it takes requests now. */
  isReady(message: In): boolean;
  /** Any other message; `held` is the request its `id` names, while that waits. */
  receive(message: In, held: Held<S, A> | undefined): void;
  /** The child ended: what each request it held fails with, or 'retry' to send it to a new child. */
  onEnd(end: ChildEnd, stderr: readonly string[]): (held: Held<S, A>) => Error | 'retry';
  /** What a request fails with once the child was disposed of. */
  closed(): Error;
  /** After its channel closes, how long the child has before SIGTERM (none when unset) and SIGKILL. */
  stop: { termAfterMs?: number; killAfterMs: number };
}

interface Entry<Out, S, A> extends Held<S, A> {
  sent: boolean;
  /** The message to send once the child is ready; undefined: the request was settled instead. */
  message: (held: Held<S, A>) => Out | undefined;
}

/** `ready`: true once the child said it is, false when it ended first. */
type Running<Out, In> = { link: ChildLink<Out, In>; ready: Promise<boolean> };

/** One child at a time, started by the first request (or `warm`) and again by the first after it ended. Requests are
 *  sent once it is ready, each with an id (a random UUID) that the child's messages about it carry as `id`; when it
 *  ends, `onEnd` says what becomes of those it held. */
export class SupervisedChild<Out, In, S, A> {
  private running: Running<Out, In> | undefined;
  private readonly held = new Map<string, Entry<Out, S, A>>();
  private disposed = false;

  constructor(private readonly options: SupervisedChildOptions<Out, In, S, A>) {}

  /** The child's process id, while one runs. */
  get pid(): number | undefined {
    return this.running?.link.child.pid;
  }

  /** The request that has waited longest. */
  oldest(): Held<S, A> | undefined {
    return this.held.values().next().value;
  }

  /** Starts the child ahead of the first request. */
  warm(): void {
    if (!this.disposed && !this.running) this.launch();
  }

  /** Holds a request (`state`) and sends `message(held)` to the child once it is ready (again to a new one, on a retry). */
  request(state: S, message: (held: Held<S, A>) => Out | undefined): { held: Held<S, A>; answer: Promise<A> } {
    let settle!: { resolve: (answer: A) => void; reject: (error: Error) => void };
    const answer = new Promise<A>((resolve, reject) => {
      settle = { resolve, reject };
    });
    const held = this.held;
    /** Whether it still waited: it is answered or failed once only. */
    const leaves = () => held.get(entry.id) === entry && held.delete(entry.id);
    const entry: Entry<Out, S, A> = {
      id: randomUUID(),
      state,
      sent: false,
      message,
      get waiting() {
        return held.get(entry.id) === entry;
      },
      resolve: (value) => leaves() && settle.resolve(value),
      reject: (error) => leaves() && settle.reject(error),
    };
    this.held.set(entry.id, entry);
    void this.dispatch(entry);
    return { held: entry, answer };
  }

  /** To the child running now, if any. */
  send(message: Out): void {
    this.running?.link.send(message);
  }

  /** Fails every request held and stops the child; later requests fail at once. */
  async dispose(): Promise<void> {
    this.disposed = true;
    const running = this.running;
    this.running = undefined;
    const error = this.options.closed();
    for (const entry of [...this.held.values()]) entry.reject(error);
    const link = running?.link;
    if (!link) return;
    link.hangUp();
    const { termAfterMs, killAfterMs } = this.options.stop;
    // One busy (a model loading) is stopped: nobody waits for its answers any more.
    const term = termAfterMs === undefined ? undefined : setTimeout(() => link.child.kill('SIGTERM'), termAfterMs);
    const kill = setTimeout(() => link.child.kill('SIGKILL'), killAfterMs);
    await link.ended;
    clearTimeout(term);
    clearTimeout(kill);
  }

  private async dispatch(entry: Entry<Out, S, A>): Promise<void> {
    let running: Running<Out, In>;
    try {
      running = this.running ?? this.launch();
    } catch (err) {
      return entry.reject(err as Error);
    }
    // Ended before it was ready: its end failed the request or sent it on.
    if (!(await running.ready) || this.running !== running || !entry.waiting) return;
    const message = entry.message(entry);
    if (message === undefined) return;
    entry.sent = true;
    // Sent to a child that just died, it fails there and the child's end takes the request up.
    running.link.send(message, (err) => entry.reject(err));
  }

  private launch(): Running<Out, In> {
    if (this.disposed) throw this.options.closed();
    const link = this.options.start();
    let readied!: (ready: boolean) => void;
    const running: Running<Out, In> = { link, ready: new Promise((resolve) => (readied = resolve)) };
    this.running = running;
    link.onMessage((message) => {
      if (this.options.isReady(message)) return readied(true);
      const id = (message as { id?: unknown }).id;
      this.options.receive(message, typeof id === 'string' ? this.held.get(id) : undefined);
    });
    void link.ended.then((end) => {
      if (this.running === running) this.running = undefined;
      readied(false);
      const fate = this.options.onEnd(end, link.stderr);
      for (const entry of [...this.held.values()]) {
        const outcome = fate(entry);
        if (outcome !== 'retry') entry.reject(outcome);
        else {
          entry.sent = false;
          void this.dispatch(entry);
        }
      }
    });
    return running;
  }
}
