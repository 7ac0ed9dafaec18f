// llama.cpp in processes of its own (#45). A GGUF llama.cpp cannot load ends the process it runs in with a C++ abort,
// and in the embedded default the worker's process is the whole stack; so is an out-of-memory kill during a load. The
// worker keeps one engine process (engine-process-main.ts: a FastEngine that keeps models warm and decodes) and talks
// to it over IPC. A model file is first opened by a short-lived probe process, once per file (path, size, mtime); the
// engine process loads only files that passed. When the engine process dies, what it was decoding fails with "the
// engine restarted: …" (a request that had streamed nothing yet is tried once more on a new one), and the next request
// starts a new one. Both processes ask the kernel to kill them before anything else (oom_score_adj 1000).
import { stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { ending, forkTypeScript, SupervisedChild, why, type Held } from '@ftp/core-client/supervised-child';
import type { FastEngineOptions, GenerateRequest, Generation } from './engine.ts';
import { refusalOf, type RefusalKind } from './refusals.ts';

const MAIN = fileURLToPath(new URL('./engine-process-main.ts', import.meta.url));

/** What the inference worker needs of a fast engine: FastEngine in this process (tests) or EngineProcess. */
export interface FastGenerator {
  generate(request: GenerateRequest): Promise<Generation[]>;
  dispose(): Promise<void>;
}

/** Parent → engine process. */
export type EngineRequest =
  | { type: 'generate'; id: string; request: Omit<GenerateRequest, 'onText' | 'signal' | 'onCancelled'>; stream: boolean }
  | { type: 'cancel'; id: string; reason: string };

/** Engine process → parent. */
export type EngineMessage =
  | { type: 'ready' }
  | { type: 'text'; id: string; index: number; delta: string }
  | { type: 'result'; id: string; generations: Generation[] }
  | { type: 'error'; id: string; message: string; kind?: RefusalKind }
  /** Before the error of a request its cancel stopped: what it had decoded. */
  | { type: 'cancelled'; id: string; decodedTokens: number };

/** The engine process ended while it decoded this request (or the probe refused the model). */
export class EngineCrashed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineCrashed';
  }
}

/** What a request keeps while the engine process holds it. */
interface Asked {
  request: GenerateRequest;
  streamed: boolean;
  retried: boolean;
}

export class EngineProcess implements FastGenerator {
  private readonly engine: SupervisedChild<EngineRequest, EngineMessage, Asked, Generation[]>;
  /** Probe outcomes by file identity: undefined while unknown, an error message for a file llama.cpp cannot load. */
  private readonly probed = new Map<string, Promise<string | undefined>>();

  constructor(private readonly options: FastEngineOptions = {}) {
    this.engine = new SupervisedChild({
      start: () => forkTypeScript(MAIN, [JSON.stringify(options)]),
      isReady: (message) => message.type === 'ready',
      receive: (message, held) => this.receive(message, held),
      onEnd: (end, stderr) => {
        const reason = `the engine restarted: llama.cpp's process ${end.startError ? `could not start: ${end.startError.message}` : `${ending(end)}${why(stderr)}`}`;
        // Each request it held is tried once more if it had streamed nothing, else fails.
        return ({ state }) => {
          if (state.request.signal?.aborted) return state.request.signal.reason as Error;
          if (state.streamed || state.retried) return new EngineCrashed(`${reason} while it ran ${state.request.modelPath}`);
          state.retried = true;
          return 'retry';
        };
      },
      closed: () => new EngineCrashed('the fast engine was closed'),
      // the engine process exits when its channel closes
      stop: { killAfterMs: 5_000 },
    });
  }

  /** The engine process's id while one runs (tests end it to check what happens then). */
  get pid(): number | undefined {
    return this.engine.pid;
  }

  async generate(request: GenerateRequest): Promise<Generation[]> {
    if (request.loraPath) await stat(request.loraPath); // a clear ENOENT before anything loads it
    this.engine.warm(); // starting while the probe runs: each takes a second or two of imports
    for (const file of [request.modelPath, ...(request.loraPath ? [request.loraPath] : [])]) {
      const refused = await this.probe(file, request.modelPath);
      if (refused) throw new EngineCrashed(refused);
    }
    const { held, answer } = this.engine.request({ request, streamed: false, retried: false }, ({ id, reject }) => {
      // Cancelled while the engine started: no cancel could reach it, so the request must not go either.
      if (request.signal?.aborted) {
        request.onCancelled?.(0);
        reject(request.signal.reason as Error);
        return undefined;
      }
      const { onText: _onText, signal: _signal, onCancelled: _onCancelled, ...rest } = request;
      return { type: 'generate', id, request: rest, stream: request.onText !== undefined };
    });
    const onAbort = () => held.sent && this.engine.send({ type: 'cancel', id: held.id, reason: String(request.signal?.reason ?? 'aborted') });
    request.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await answer;
    } finally {
      request.signal?.removeEventListener('abort', onAbort);
    }
  }

  dispose(): Promise<void> {
    return this.engine.dispose();
  }

  /** Whether llama.cpp can load `file` (the model, or a LoRA adapter over `model`), asked once per file version of a
   *  process of its own; undefined when it can, else what to tell the request. */
  private async probe(file: string, model: string): Promise<string | undefined> {
    const { size, mtimeMs } = await stat(file);
    const key = `${file}\u0000${size}\u0000${mtimeMs}`;
    let outcome = this.probed.get(key);
    if (!outcome) {
      const probe = forkTypeScript(MAIN, ['--probe', JSON.stringify({ model, ...(file === model ? {} : { lora: file }), gpu: this.options.gpu ?? 'auto' })]);
      // after the exit, once the abort's message has come through stderr
      outcome = probe.ended.then((end) => {
        if (end.startError) return `llama.cpp's probe of ${file} could not start: ${end.startError.message}`;
        if (end.code === 0) return undefined;
        return `llama.cpp cannot load ${file} (its probe process ${ending(end)}${why(probe.stderr)}); use_fast_engine false runs the model on transformers`;
      });
      this.probed.set(key, outcome);
    }
    return outcome;
  }

  private receive(message: EngineMessage, held: Held<Asked, Generation[]> | undefined): void {
    if (!held || message.type === 'ready') return; // an answer nobody waits for any more
    const { request } = held.state;
    if (message.type === 'text') {
      held.state.streamed = true;
      request.onText?.(message.index, message.delta);
    } else if (message.type === 'cancelled') {
      request.onCancelled?.(message.decodedTokens);
    } else if (message.type === 'result') {
      held.resolve(message.generations);
    } else {
      const signal = request.signal;
      held.reject(signal?.aborted ? (signal.reason as Error) : message.kind ? refusalOf(message.kind, message.message) : new Error(message.message));
    }
  }
}
