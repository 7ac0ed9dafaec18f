// Warm contexts whose sequences are lent to whichever requests come (#45). Chats and batch lines that arrive together
// for one model file, adapter and context size take sequences of the same warm contexts; node-llama-cpp puts the
// tokens of every sequence of one context into the same decode (its batching; nothing is scheduled here), and
// contexts decode side by side on the threads it splits between them. A request that finds every sequence lent
// waits for the first one given back, in the order requests came.
//
// How many sequences one context holds is the engine's `sequencesPerContext`: all of them on a GPU, where a decode of
// 8 tokens costs about what one costs; one on a CPU, where llama.cpp's batched decode measured 8–11 ms a token
// against 6.3 ms for a single one (2 cores, SmolLM2-135M q8_0: the CPU is compute-bound, so batching saves nothing),
// and bench/generate/concurrency.ts 8 concurrent chats at 108 tokens/s on one context of 8 against 205 on 8 contexts.
import type { LlamaContext, LlamaContextSequence, LlamaModel } from 'node-llama-cpp';

export interface SharedContextSpec {
  loraPath?: string;
  /** Tokens one sequence holds (prompt + answer). */
  contextSize: number;
  /** Sequences of one context. */
  sequencesPerContext: number;
  /** At most this many sequences in all; fewer when their contexts would not fit `memoryBytes`. */
  maxSequences: number;
  /** What the contexts (KV caches and compute buffers) may take, in RAM and VRAM together. */
  memoryBytes: number;
  threads?: number;
}

/** The smallest context size a shared context is made with: short chats of different lengths then share one. */
const MIN_CONTEXT_SIZE = 1024;

/** The context size for `tokens` tokens: the next power of two (at least MIN_CONTEXT_SIZE), at most the model's. */
export function contextSizeFor(model: LlamaModel, tokens: number): number {
  const size = Math.max(MIN_CONTEXT_SIZE, 2 ** Math.ceil(Math.log2(Math.max(tokens, 1))));
  return Math.min(size, model.trainContextSize);
}

/** Sequences per context and in all, as many as fit the memory given (node-llama-cpp's estimate of a context's
 *  RAM + VRAM); at least one. With less memory than `maxSequences` contexts of `sequencesPerContext` need, a context
 *  holds more sequences (each costs far less than a context's compute buffers) rather than requests waiting. */
export function capacityFor(model: LlamaModel, spec: SharedContextSpec): { perContext: number; limit: number } {
  const bytes = (sequences: number) => {
    try {
      const need = model.fileInsights.estimateContextResourceRequirements({ contextSize: spec.contextSize, sequences, modelGpuLayers: model.gpuLayers });
      return need.cpuRam + need.gpuVram;
    } catch {
      return 0; // an architecture the estimate does not know: the settings alone decide
    }
  };
  let perContext = Math.max(1, Math.min(spec.sequencesPerContext, spec.maxSequences));
  while (perContext > 1 && bytes(perContext) > spec.memoryBytes) perContext--;
  let best = { perContext, limit: 1 };
  for (let p = perContext; p <= spec.maxSequences; p++) {
    const limit = Math.min(spec.maxSequences, Math.floor(spec.memoryBytes / bytes(p)) * p);
    if (limit > best.limit) best = { perContext: p, limit };
    if (limit >= spec.maxSequences || limit === 0) break;
  }
  return best;
}

export interface ContextsState {
  contextSize: number;
  loraPath?: string;
  contexts: number;
  sequences: number;
  lent: number;
  waiting: number;
}

/** The warm contexts of one (model, adapter, context size): made when every sequence is lent and there is room for
 *  more, kept until SharedContexts disposes the group (idle, another group made, or the model unloaded). */
class ContextGroup {
  private readonly contexts: LlamaContext[] = [];
  private readonly free: LlamaContextSequence[] = []; // lowest rank first
  private readonly rank = new Map<LlamaContextSequence, number>();
  private readonly waiting: { take: (sequence: LlamaContextSequence) => void; fail: (err: Error) => void }[] = [];
  private readonly capacity: { perContext: number; limit: number };
  private planned = 0; // sequences of contexts made or being made
  private lent = 0;
  private disposed = false;

  constructor(
    private readonly model: LlamaModel,
    private readonly spec: SharedContextSpec,
  ) {
    this.capacity = capacityFor(model, spec);
  }

  get state(): ContextsState {
    const { contextSize, loraPath } = this.spec;
    return { contextSize, ...(loraPath ? { loraPath } : {}), contexts: this.contexts.length, sequences: this.rank.size, lent: this.lent, waiting: this.waiting.length };
  }

  /** Runs `use` on a sequence with an empty history; waits for one when all are lent and no more fit. */
  async with<T>(use: (sequence: LlamaContextSequence) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const sequence = await this.borrow(signal);
    try {
      return await use(sequence);
    } finally {
      await this.giveBack(sequence);
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    for (const waiter of this.waiting.splice(0)) waiter.fail(new Error('the model was unloaded'));
    await Promise.all(this.contexts.splice(0).map((c) => c.dispose()));
  }

  private borrow(signal?: AbortSignal): Promise<LlamaContextSequence> {
    signal?.throwIfAborted();
    const sequence = this.free.shift();
    if (sequence) {
      this.lent += 1;
      return Promise.resolve(sequence);
    }
    const waited = new Promise<LlamaContextSequence>((resolve, reject) => {
      const waiter = {
        take: (s: LlamaContextSequence) => {
          this.lent += 1;
          resolve(s);
        },
        fail: reject,
      };
      this.waiting.push(waiter);
      signal?.addEventListener('abort', () => {
        const at = this.waiting.indexOf(waiter);
        if (at < 0) return;
        this.waiting.splice(at, 1);
        reject(signal.reason as Error);
      }, { once: true });
    });
    if (this.planned < this.capacity.limit) this.grow();
    return waited;
  }

  /** One more context, for the requests waiting. */
  private grow(): void {
    const sequences = Math.min(this.capacity.perContext, this.capacity.limit - this.planned);
    this.planned += sequences;
    this.model
      .createContext({
        sequences,
        contextSize: this.spec.contextSize,
        ...(this.spec.threads ? { threads: this.spec.threads } : {}),
        ...(this.spec.loraPath ? { lora: { adapters: [{ filePath: this.spec.loraPath }] } } : {}),
      })
      .then(
        async (context) => {
          if (this.disposed) return context.dispose();
          this.contexts.push(context);
          for (let i = 0; i < sequences; i++) {
            const sequence = context.getSequence();
            this.rank.set(sequence, this.rank.size);
            this.release(sequence);
          }
        },
        (err: Error) => {
          this.planned -= sequences;
          // With no context at all, nobody waiting would ever be served; otherwise they wait for the ones there are.
          if (this.contexts.length === 0) for (const waiter of this.waiting.splice(0)) waiter.fail(err);
        },
      );
  }

  /** A sequence comes back cleared, and the lowest free one is lent first: a seeded sample then meets the same
   *  sequence state whatever ran on the context before. */
  private async giveBack(sequence: LlamaContextSequence): Promise<void> {
    this.lent -= 1;
    if (this.disposed) return;
    await sequence.clearHistory();
    this.release(sequence);
  }

  private release(sequence: LlamaContextSequence): void {
    const waiter = this.waiting.shift();
    if (waiter) return waiter.take(sequence);
    const rank = this.rank.get(sequence)!;
    const at = this.free.findIndex((s) => this.rank.get(s)! > rank);
    this.free.splice(at < 0 ? this.free.length : at, 0, sequence);
  }
}

/** A model's warm contexts, a group per (adapter, context size). Making a group disposes the model's others that
 *  nobody uses or waits for, so a model keeps at most one idle group, and that one only for `idleMs`: the contexts'
 *  memory comes back once requests stop (the next one makes a context again, milliseconds on a CPU). */
export class SharedContexts {
  private readonly groups = new Map<string, ContextGroup>();
  /** Requests using or about to use each group, counted before any await so that none is disposed under them. */
  private readonly users = new Map<string, number>();
  private readonly idleTimers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly model: LlamaModel,
    private readonly idleMs: number,
  ) {}

  get state(): ContextsState[] {
    return [...this.groups.values()].map((g) => g.state);
  }

  async with<T>(spec: SharedContextSpec, use: (sequence: LlamaContextSequence) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const key = `${spec.loraPath ?? ''}\0${spec.contextSize}`;
    this.users.set(key, (this.users.get(key) ?? 0) + 1);
    clearTimeout(this.idleTimers.get(key));
    try {
      let group = this.groups.get(key);
      if (!group) {
        await this.disposeIdle();
        group = this.groups.get(key) ?? new ContextGroup(this.model, spec); // another request may have made it meanwhile
        this.groups.set(key, group);
      }
      return await group.with(use, signal);
    } finally {
      this.users.set(key, this.users.get(key)! - 1);
      if (!this.users.get(key)) this.releaseWhenIdle(key);
    }
  }

  private releaseWhenIdle(key: string): void {
    const timer = setTimeout(() => {
      this.idleTimers.delete(key);
      const group = this.groups.get(key);
      if (!group || this.users.get(key)) return;
      this.groups.delete(key);
      void group.dispose();
    }, this.idleMs);
    timer.unref();
    this.idleTimers.set(key, timer);
  }

  async dispose(): Promise<void> {
    for (const timer of this.idleTimers.values()) clearTimeout(timer);
    this.idleTimers.clear();
    const groups = [...this.groups.values()];
    this.groups.clear();
    await Promise.all(groups.map((g) => g.dispose()));
  }

  private async disposeIdle(): Promise<void> {
    const idle = [...this.groups].filter(([key]) => !this.users.get(key));
    for (const [key] of idle) this.groups.delete(key);
    await Promise.all(idle.map(([, g]) => g.dispose()));
  }
}
