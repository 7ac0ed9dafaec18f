// llama.cpp in processes of its own (#45). A GGUF llama.cpp cannot load ends the process it runs in with a C++ abort,
// and in the embedded default the worker's process is the whole stack; so is an out-of-memory kill during a load. The
// worker keeps one engine process (engine-process-main.ts: a FastEngine that keeps models warm and decodes) and talks
// to it over IPC. A model file is first opened by a short-lived probe process, once per file (path, size, mtime); the
// engine process loads only files that passed. When the engine process dies, what it was decoding fails with "the
// engine restarted: …" (a request that had streamed nothing yet is tried once more on a new one), and the next request
// starts a new one. Both processes ask the kernel to kill them before anything else (oom_score_adj 1000).
import type { ChildProcess } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { ended, ending, forkTypeScript, why } from '../child-process.ts';
import type { FastEngineOptions, GenerateRequest, Generation } from './engine.ts';
import { refusalOf, type RefusalKind } from './refusals.ts';

const MAIN = fileURLToPath(new URL('./engine-process-main.ts', import.meta.url));
const start = (args: string[]) => forkTypeScript(MAIN, args);

/** What the inference worker needs of a fast engine: FastEngine in this process (tests) or EngineProcess. */
export interface FastGenerator {
  generate(request: GenerateRequest): Promise<Generation[]>;
  dispose(): Promise<void>;
}

/** Parent → engine process. */
export type EngineRequest =
  | { type: 'generate'; id: number; request: Omit<GenerateRequest, 'onText' | 'signal' | 'onCancelled'>; stream: boolean }
  | { type: 'cancel'; id: number; reason: string };

/** Engine process → parent. */
export type EngineMessage =
  | { type: 'ready' }
  | { type: 'text'; id: number; index: number; delta: string }
  | { type: 'result'; id: number; generations: Generation[] }
  | { type: 'error'; id: number; message: string; kind?: RefusalKind }
  /** Before the error of a request its cancel stopped: what it had decoded. */
  | { type: 'cancelled'; id: number; decodedTokens: number };

/** The engine process ended while it decoded this request (or the probe refused the model). */
export class EngineCrashed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineCrashed';
  }
}

interface Pending {
  request: GenerateRequest;
  streamed: boolean;
  retried: boolean;
  resolve: (generations: Generation[]) => void;
  reject: (err: Error) => void;
  cleanup: () => void;
}

interface Running {
  child: ChildProcess;
  ready: Promise<void>;
  stderr: string[];
}

export class EngineProcess implements FastGenerator {
  private running: Running | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** Probe outcomes by file identity: undefined while unknown, an error message for a file llama.cpp cannot load. */
  private readonly probed = new Map<string, Promise<string | undefined>>();
  private closed = false;

  constructor(private readonly options: FastEngineOptions = {}) {}

  /** The engine process's id while one runs (tests end it to check what happens then). */
  get pid(): number | undefined {
    return this.running?.child.pid;
  }

  async generate(request: GenerateRequest): Promise<Generation[]> {
    if (request.loraPath) await stat(request.loraPath); // a clear ENOENT before anything loads it
    if (!this.closed) this.engine(); // starting while the probe runs: each takes a second or two of imports
    for (const file of [request.modelPath, ...(request.loraPath ? [request.loraPath] : [])]) {
      const refused = await this.probe(file, request.modelPath);
      if (refused) throw new EngineCrashed(refused);
    }
    return new Promise<Generation[]>((resolve, reject) => {
      const id = this.nextId++;
      const onAbort = () => this.running?.child.send({ type: 'cancel', id, reason: String(request.signal?.reason ?? 'aborted') } satisfies EngineRequest);
      request.signal?.addEventListener('abort', onAbort, { once: true });
      const cleanup = () => request.signal?.removeEventListener('abort', onAbort);
      this.pending.set(id, { request, streamed: false, retried: false, resolve, reject, cleanup });
      void this.send(id);
    });
  }

  async dispose(): Promise<void> {
    this.closed = true;
    const running = this.running;
    this.running = undefined;
    this.failAll(new EngineCrashed('the fast engine was closed'));
    if (!running || running.child.exitCode !== null || running.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => running.child.once('exit', () => resolve()));
    running.child.disconnect?.(); // the engine process exits when its channel closes
    const kill = setTimeout(() => running.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(kill);
  }

  /** Whether llama.cpp can load `file` (the model, or a LoRA adapter over `model`), asked once per file version of a
   *  process of its own; undefined when it can, else what to tell the request. */
  private async probe(file: string, model: string): Promise<string | undefined> {
    const { size, mtimeMs } = await stat(file);
    const key = `${file}\u0000${size}\u0000${mtimeMs}`;
    let outcome = this.probed.get(key);
    if (!outcome) {
      outcome = new Promise<string | undefined>((resolve) => {
        const { child, stderr } = start(['--probe', JSON.stringify({ model, ...(file === model ? {} : { lora: file }), gpu: this.options.gpu ?? 'auto' })]);
        child.once('error', (err) => resolve(`llama.cpp's probe of ${file} could not start: ${err.message}`));
        // after the exit, once the abort's message has come through stderr
        ended(child, (code, signal) => {
          if (code === 0) resolve(undefined);
          else resolve(`llama.cpp cannot load ${file} (its probe process ${ending(code, signal)}${why(stderr)}); use_fast_engine false runs the model on transformers`);
        });
      });
      this.probed.set(key, outcome);
    }
    return outcome;
  }

  private async send(id: number): Promise<void> {
    const pending = this.pending.get(id);
    if (!pending) return;
    let running: Running;
    try {
      running = this.engine();
    } catch (err) {
      return this.settle(id, (p) => p.reject(err as Error));
    }
    try {
      await running.ready;
    } catch {
      return; // it ended before it was ready: crashed() tried this request again or failed it
    }
    if (this.running !== running || !this.pending.has(id)) return;
    // Cancelled while the engine started: the cancel went nowhere, so the request must not go either.
    if (pending.request.signal?.aborted) {
      pending.request.onCancelled?.(0);
      return this.settle(id, (p) => p.reject(p.request.signal!.reason as Error));
    }
    const { onText: _onText, signal: _signal, onCancelled: _onCancelled, ...request } = pending.request;
    // Sent to a process that just died, it fails here and crashed() takes the request up when the exit is seen.
    running.child.send({ type: 'generate', id, request, stream: pending.request.onText !== undefined } satisfies EngineRequest, (err) => {
      if (err && running.child.connected) this.settle(id, (p) => p.reject(err));
    });
  }

  /** The running engine process, started when there is none. */
  private engine(): Running {
    if (this.closed) throw new EngineCrashed('the fast engine was closed');
    if (this.running) return this.running;
    const { child, stderr } = start([JSON.stringify(this.options)]);
    let readied: () => void = () => undefined;
    let failed: (err: Error) => void = () => undefined;
    const ready = new Promise<void>((resolve, reject) => {
      readied = resolve;
      failed = reject;
    });
    ready.catch(() => undefined); // observed through the requests that wait on it
    const running: Running = { child, ready, stderr };
    this.running = running;
    let over = false;
    const end = (reason: string) => {
      if (over) return;
      over = true;
      if (this.running === running) this.running = undefined;
      failed(new EngineCrashed(reason));
      this.crashed(reason);
    };
    child.on('message', (message: EngineMessage) => this.receive(message, readied));
    child.once('error', (err) => {
      if (child.pid === undefined) end(`the engine restarted: llama.cpp's process could not start: ${err.message}`);
    });
    ended(child, (code, signal) => end(`the engine restarted: llama.cpp's process ${ending(code, signal)}${why(stderr)}`));
    return running;
  }

  private receive(message: EngineMessage, readied: () => void): void {
    if (message.type === 'ready') return readied();
    const pending = this.pending.get(message.id);
    if (!pending) return; // an answer nobody waits for any more
    if (message.type === 'text') {
      pending.streamed = true;
      pending.request.onText?.(message.index, message.delta);
    } else if (message.type === 'cancelled') {
      pending.request.onCancelled?.(message.decodedTokens);
    } else if (message.type === 'result') {
      this.settle(message.id, (p) => p.resolve(message.generations));
    } else {
      const signal = pending.request.signal;
      const err = signal?.aborted ? (signal.reason as Error) : message.kind ? refusalOf(message.kind, message.message) : new Error(message.message);
      this.settle(message.id, (p) => p.reject(err));
    }
  }

  /** The engine process ended: each request it held is tried once more if it had streamed nothing, else fails. */
  private crashed(reason: string): void {
    for (const [id, pending] of this.pending) {
      if (pending.request.signal?.aborted) this.settle(id, (p) => p.reject(pending.request.signal!.reason as Error));
      else if (!pending.streamed && !pending.retried && !this.closed) {
        pending.retried = true;
        void this.send(id);
      } else this.settle(id, (p) => p.reject(new EngineCrashed(`${reason} while it ran ${pending.request.modelPath}`)));
    }
  }

  private settle(id: number, how: (pending: Pending) => void): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    pending.cleanup();
    how(pending);
  }

  private failAll(err: Error): void {
    for (const id of [...this.pending.keys()]) this.settle(id, (p) => p.reject(err));
  }
}
