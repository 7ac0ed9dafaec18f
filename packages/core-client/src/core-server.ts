// A warm ML core: one long-lived `ftcore serve` process that keeps models loaded between requests. Requests
// are written to its stdin as JSON lines, each with an id, and pipelined (the core answers them in order);
// answers are matched by id. A request past its time limit is cancelled in the core and rejected here; a core
// that dies fails its pending requests with the reason and is started again by the next request (supervised-child.ts).
import type { CoreEvent, GeneratedEvent, GradedEvent, PreflightEvent, ScoredEvent } from './events.ts';
import { coreEventOf, spawnCore } from './run-core.ts';
import { ending, jsonLines, SupervisedChild, why, type ChildLink, type Held } from './supervised-child.ts';
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

export class CoreServer {
  private readonly core: SupervisedChild<Record<string, unknown>, CoreEvent, RequestOptions, Answer>;
  /** Requests cancelled in the core whose answer is still to come, with who wants to know what they cost. */
  private readonly cancelled = new Map<string, (generatedTokens: number) => void>();

  constructor(private readonly options: CoreServerOptions = {}) {
    this.core = new SupervisedChild({
      start: () => this.spawn(),
      isReady: (event) => event.event === 'ready',
      receive: (event, held) => this.receive(event, held),
      onEnd: (end, stderr) => {
        this.cancelled.clear(); // the core that would have answered them is gone
        const how = end.startError ? `could not be started (${end.startError.message})` : ending(end);
        const error = new CoreServerError('exited', `the ML core server ${how}${why(stderr)}`);
        return () => error;
      },
      closed: () => new CoreServerError('closed', 'the ML core server was closed'),
      // An idle core exits at once when its stdin closes (it cancels what runs); one busy loading a model is stopped.
      stop: { termAfterMs: 2_000, killAfterMs: 10_000 },
    });
  }

  /** The core's process id, while one runs. */
  get pid(): number | undefined {
    return this.core.pid;
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

  /** The pre-flight report of a train spec (the core's train/preflight/), without a throughput probe; `sampled`
   *  false leaves out the warnings that load the model and sample it too (DPO's end of turn, GRPO's reward spread). */
  preflight(spec: Record<string, unknown>, options: RequestOptions & { sampled?: boolean } = {}): Promise<Preflight> {
    return this.request('preflight', { spec, sampled: options.sampled ?? true }, options) as Promise<Preflight>;
  }

  /** Stops the core (stdin closes: it cancels what runs and exits) and fails what is pending. */
  async close(): Promise<void> {
    this.cancelled.clear();
    await this.core.dispose();
  }

  private async request(op: 'generate' | 'evaluate' | 'grade' | 'preflight', params: GenerateParams | EvaluateParams | GradeParams | { spec: Record<string, unknown>; sampled: boolean }, options: RequestOptions): Promise<Answer> {
    const { held, answer } = this.core.request(options, ({ id }) => ({ ...params, op, id }));
    const giveUp = (error: CoreServerError) => {
      if (!held.waiting) return;
      if (held.sent) this.core.send({ op: 'cancel', id: held.id }); // the core stops working on it at its next token
      held.reject(error);
    };
    const timeoutMs = options.timeoutMs ?? this.options.requestTimeoutMs;
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => giveUp(new CoreServerError('timeout', `the ML core did not answer within ${timeoutMs} ms`)), timeoutMs);
    const onAbort = () => {
      if (options.onCancelled && held.waiting) {
        if (held.sent) this.cancelled.set(held.id, options.onCancelled);
        else options.onCancelled(0); // the core never had it
      }
      giveUp(new CoreServerError('cancelled', 'the request was cancelled'));
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await answer;
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** A new `ftcore serve`. stdin is its request channel; when this process dies it closes and the core exits (serve
   *  runs no parent watch). */
  private spawn(): ChildLink<Record<string, unknown>, CoreEvent> {
    const flags = [
      ...(this.options.memoryBudgetBytes !== undefined ? ['--memory_budget_bytes', String(this.options.memoryBudgetBytes)] : []),
      ...(this.options.device ? ['--device', this.options.device] : []),
      ...(this.options.bertscoreEncoder ? ['--bertscore_encoder', this.options.bertscoreEncoder] : []),
    ];
    const { child, stderrTail } = spawnCore(['serve', ...flags], {
      ...(this.options.python ? { python: this.options.python } : {}),
      ...(this.options.env ? { env: this.options.env } : {}),
      ...(this.options.onStderr ? { onStderr: this.options.onStderr } : {}),
    });
    return jsonLines(child, stderrTail, (line) => coreEventOf(line, stderrTail));
  }

  private receive(event: CoreEvent, held: Held<RequestOptions, Answer> | undefined): void {
    if (event.event === 'log') {
      // The core answers requests one at a time, in order: what it says now is about the oldest one waiting.
      this.core.oldest()?.state.onProgress?.(event.message);
      return this.options.onLog?.(event);
    }
    if (event.event !== 'generated' && event.event !== 'scored' && event.event !== 'graded' && event.event !== 'preflight' && event.event !== 'error') return;
    const cancelled = event.id ? this.cancelled.get(event.id) : undefined;
    if (cancelled) {
      this.cancelled.delete(event.id!);
      const cost = event.event === 'error' ? (event.generated_tokens ?? 0) : event.event === 'generated' ? event.token_ids.reduce((n, ids) => n + ids.length, 0) : 0;
      return cancelled(cost);
    }
    if (!held) {
      if (event.event === 'error') this.options.onLog?.({ event: 'log', level: 'error', message: event.message });
      return; // an answer nobody waits for any more (timed out), or a server-level error
    }
    if (event.event === 'error') held.reject(new CoreServerError(event.code, event.message, event.field ?? undefined));
    else held.resolve(event);
  }
}
