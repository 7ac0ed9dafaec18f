// A warm ML core: one long-lived `ftcore serve` process that keeps models loaded between requests. Requests
// are written to its stdin as JSON lines, each with an id, and pipelined (the core answers them in order);
// answers are matched by id. A request past its time limit is cancelled in the core and rejected here; a core
// that dies fails its pending requests with the reason and is started again by the next request.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { parseCoreEventLine, type CoreEvent, type GeneratedEvent, type GradedEvent, type PreflightEvent, type ScoredEvent } from './events.ts';
import { spawnCore, stderrSummary } from './run-core.ts';
import type { PlainMessage } from '@ftp/schema';
import type { z } from 'zod';

export type Generated = z.infer<typeof GeneratedEvent>;
export type Scored = z.infer<typeof ScoredEvent>;
export type Preflight = z.infer<typeof PreflightEvent>;
export type Graded = z.infer<typeof GradedEvent>;
type Answer = Generated | Scored | Preflight | Graded;
type LogEvent = Extract<CoreEvent, { event: 'log' }>;


export interface GenerateParams {
  /** Base or merged model folder. */
  model: string;
  /** LoRA adapter folder applied over `model`. */
  adapter?: string;
  conversations: readonly (readonly PlainMessage[])[];
  max_new_tokens?: number;
  temperature?: number;
  top_p?: number;
  /** Sampling seed (the batch shares one random stream: a conversation's sample depends on its batch). */
  seed?: number;
  /** Each text ends before the first of these (finish_reason stop). */
  stop?: readonly string[];
  batch_size?: number;
  /** OpenAI tool definitions every conversation is rendered with. */
  tools?: readonly Record<string, unknown>[];
  /** Every answer is this call: `prefix`, JSON of `schema`, `suffix` (constrained decoding). */
  forced_call?: { schema: Record<string, unknown>; prefix: string; suffix: string };
}

export interface EvaluateParams {
  predictions: string[];
  references: string[];
  metrics?: string[];
  task_type?: string;
}

export interface GradeParams {
  /** An OpenAI grader object (core/src/ftcore/evaluation/graders.py): string_check, text_similarity, python or multi. */
  grader: Record<string, unknown>;
  /** The sampled answers, each graded against its item. */
  outputs: string[];
  items: Record<string, unknown>[];
  /** Where score_model graders ask their judge (the worker's relay for this request's user). */
  judge?: { url: string; token: string };
}

export interface RequestOptions {
  /** Overrides the server's default time limit for this request. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Told what the core says while it works on this request (a cold model's load and its time so far). */
  onProgress?: (message: string) => void;
  /** After `signal` cancelled the request (it rejects at once), told when the core stops: the tokens it had generated
   *  (0 for a request it had not started). */
  onCancelled?: (generatedTokens: number) => void;
}

export interface CoreServerOptions {
  python?: string;
  /** Bytes of model parameters the core keeps loaded (its LRU budget). */
  memoryBudgetBytes?: number;
  device?: 'auto' | 'cpu' | 'cuda';
  /** Local encoder folder for bertscore (default: the packaged all-MiniLM-L6-v2). */
  bertscoreEncoder?: string;
  /** Extra environment for the core (HF_TOKEN, OMP_NUM_THREADS, …). */
  env?: Record<string, string | undefined>;
  /** Default time limit of one request, from the call to the answer (including a core start). */
  requestTimeoutMs?: number;
  onLog?: (event: LogEvent) => void;
  onStderr?: (line: string) => void;
}

export type CoreServerErrorCode = 'validation' | 'runtime' | 'cancelled' | 'timeout' | 'exited' | 'closed';

/** A request the core did not answer with a result; `code` says why (the core's own error code, or ours). */
/** A core field path ("grader.input[0].content") as a location's keys: grader, input, 0, content. */
export const fieldKeys = (field: string): string[] => field.split(/[.[\]]/).filter((key) => key !== '');

export class CoreServerError extends Error {
  constructor(
    readonly code: CoreServerErrorCode,
    message: string,
    /** validation: the dotted path of the field the core refused ("grader.source"), when it names one. */
    readonly field?: string,
  ) {
    super(message);
    this.name = 'CoreServerError';
  }
}

interface Pending {
  resolve: (event: Answer) => void;
  reject: (error: CoreServerError) => void;
  onProgress?: (message: string) => void;
}

interface Running {
  child: ChildProcessWithoutNullStreams;
  ready: Promise<void>;
  stderrTail: string[];
}

export class CoreServer {
  private running: Running | undefined;
  private readonly pending = new Map<string, Pending>();
  /** Requests cancelled in the core whose answer is still to come, with who wants to know what they cost. */
  private readonly cancelled = new Map<string, (generatedTokens: number) => void>();
  private closed = false;

  constructor(private readonly options: CoreServerOptions = {}) {}

  /** The core's process id, while one runs. */
  get pid(): number | undefined {
    return this.running?.child.pid;
  }

  generate(params: GenerateParams, options: RequestOptions = {}): Promise<Generated> {
    return this.request('generate', params, options) as Promise<Generated>;
  }

  evaluate(params: EvaluateParams, options: RequestOptions = {}): Promise<Scored> {
    return this.request('evaluate', params, options) as Promise<Scored>;
  }

  /** Each output graded by the grader against its item (python graders in the core's sandbox). */
  grade(params: GradeParams, options: RequestOptions = {}): Promise<Graded> {
    return this.request('grade', params, options) as Promise<Graded>;
  }

  /** The pre-flight report of a train spec (the core's train/preflight/), without a throughput probe. */
  preflight(spec: Record<string, unknown>, options: RequestOptions = {}): Promise<Preflight> {
    return this.request('preflight', { spec }, options) as Promise<Preflight>;
  }

  /** Stops the core (stdin closes: it cancels what runs and exits) and fails what is pending. */
  async close(): Promise<void> {
    this.closed = true;
    const running = this.running;
    this.failAll(new CoreServerError('closed', 'the ML core server was closed'));
    if (!running) return;
    const exited = new Promise<void>((resolve) => {
      if (running.child.exitCode !== null || running.child.signalCode !== null) resolve();
      else running.child.once('close', () => resolve());
    });
    running.child.stdin.end();
    // An idle core exits at once; one busy loading a model is stopped (nobody waits for its answers any more).
    const term = setTimeout(() => running.child.kill('SIGTERM'), 2_000);
    const kill = setTimeout(() => running.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(term);
    clearTimeout(kill);
  }

  private async request(op: 'generate' | 'evaluate' | 'grade' | 'preflight', params: GenerateParams | EvaluateParams | GradeParams | { spec: Record<string, unknown> }, options: RequestOptions): Promise<Answer> {
    if (this.closed) throw new CoreServerError('closed', 'the ML core server was closed');
    const id = randomUUID();
    const timeoutMs = options.timeoutMs ?? this.options.requestTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    let sent = false;
    const answered = new Promise<Answer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, ...(options.onProgress ? { onProgress: options.onProgress } : {}) });
      const giveUp = (error: CoreServerError) => {
        if (!this.pending.delete(id)) return;
        if (sent) this.send({ op: 'cancel', id }); // the core stops working on it at its next token
        reject(error);
      };
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => giveUp(new CoreServerError('timeout', `the ML core did not answer within ${timeoutMs} ms`)), timeoutMs);
      }
      if (options.signal) {
        onAbort = () => {
          if (options.onCancelled && this.pending.has(id)) {
            if (sent) this.cancelled.set(id, options.onCancelled);
            else options.onCancelled(0); // the core never had it
          }
          giveUp(new CoreServerError('cancelled', 'the request was cancelled'));
        };
        if (options.signal.aborted) onAbort();
        else options.signal.addEventListener('abort', onAbort, { once: true });
      }
    });
    try {
      const running = this.start();
      await Promise.race([running.ready, answered]);
      if (this.pending.has(id)) {
        this.send({ ...params, op, id });
        sent = true;
      }
      return await answered;
    } finally {
      clearTimeout(timer);
      if (onAbort) options.signal?.removeEventListener('abort', onAbort);
      this.pending.delete(id);
    }
  }

  private send(request: Record<string, unknown>): void {
    const child = this.running?.child;
    if (child && child.stdin.writable) child.stdin.write(`${JSON.stringify(request)}\n`);
  }

  /** The running core, started when there is none (first request, or after it died). */
  private start(): Running {
    if (this.running) return this.running;
    const flags = [
      ...(this.options.memoryBudgetBytes !== undefined ? ['--memory_budget_bytes', String(this.options.memoryBudgetBytes)] : []),
      ...(this.options.device ? ['--device', this.options.device] : []),
      ...(this.options.bertscoreEncoder ? ['--bertscore_encoder', this.options.bertscoreEncoder] : []),
    ];
    // stdin is the request channel; when this process dies it closes and the core exits (serve runs no parent watch).
    const { child, stderrTail } = spawnCore(['serve', ...flags], {
      ...(this.options.python ? { python: this.options.python } : {}),
      ...(this.options.env ? { env: this.options.env } : {}),
      ...(this.options.onStderr ? { onStderr: this.options.onStderr } : {}),
    });
    let markReady!: () => void;
    let failStart!: (error: CoreServerError) => void;
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failStart = reject;
    });
    ready.catch(() => undefined); // observed through the requests that wait on it
    const running: Running = { child, ready, stderrTail };
    this.running = running;

    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.trim() === '') return;
      let event: CoreEvent;
      try {
        event = parseCoreEventLine(line);
      } catch (err) {
        stderrTail.push(`unparseable core output: ${line.slice(0, 200)} (${(err as Error).message})`);
        return;
      }
      if (event.event === 'ready') markReady();
      else this.dispatch(event);
    });
    child.stdin.on('error', () => undefined); // EPIPE when the core died; 'close' reports it
    const onGone = (why: string) => {
      if (this.running !== running) return;
      this.running = undefined;
      const tail = stderrSummary(stderrTail);
      const error = new CoreServerError('exited', `the ML core server ${why}${tail ? `: ${tail}` : ''}`);
      failStart(error);
      this.failAll(error);
    };
    child.once('error', (err) => onGone(`could not be started (${err.message})`));
    child.once('close', (code, signal) => onGone(signal ? `was killed by ${signal}` : `exited with code ${code}`));
    return running;
  }

  private dispatch(event: CoreEvent): void {
    if (event.event === 'log') {
      // The core answers requests one at a time, in order: what it says now is about the oldest one waiting.
      this.pending.values().next().value?.onProgress?.(event.message);
      return this.options.onLog?.(event);
    }
    if (event.event !== 'generated' && event.event !== 'scored' && event.event !== 'graded' && event.event !== 'preflight' && event.event !== 'error') return;
    const id = event.id;
    const waiting = id ? this.pending.get(id) : undefined;
    const cancelled = id ? this.cancelled.get(id) : undefined;
    if (cancelled) {
      this.cancelled.delete(id!);
      const cost = event.event === 'error' ? (event.generated_tokens ?? 0) : event.event === 'generated' ? event.token_ids.reduce((n, ids) => n + ids.length, 0) : 0;
      return cancelled(cost);
    }
    if (!waiting || !id) {
      if (event.event === 'error') this.options.onLog?.({ event: 'log', level: 'error', message: event.message });
      return; // an answer nobody waits for any more (timed out), or a server-level error
    }
    this.pending.delete(id);
    if (event.event === 'error') waiting.reject(new CoreServerError(event.code, event.message, event.field ?? undefined));
    else waiting.resolve(event);
  }

  private failAll(error: CoreServerError): void {
    const waiting = [...this.pending.values()];
    this.pending.clear();
    this.cancelled.clear(); // the core that would have answered them is gone
    for (const p of waiting) p.reject(error);
  }
}
