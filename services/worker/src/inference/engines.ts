// The two ways a model runs on a worker, both kept warm for the life of the worker: transformers (+PEFT) in one
// long-lived ML core process (CoreServer, `ftcore serve`), and llama.cpp in a process of its own (EngineProcess,
// started on first use; a model that makes llama.cpp abort ends that process, never the worker's). Each keeps an LRU of loaded models within INFERENCE_MEMORY_BYTES. Their failures become the errors
// the API answers with (they cross the queue as data).
import { CoreServer, CoreServerError, fieldKeys, type EvaluateParams, type Generated, type Scored } from '@ftp/core-client';
import type { PlainMessage } from '@ftp/schema';
import { invalidField, ServiceUnavailable, type Platform } from '@ftp/platform';
import { samplingTemperature, type GenerationDetail, type GenerationSettings, type GradePayload, type GradeResult, type InferResult, type StreamDelta } from '@ftp/jobs/queues';
import { withJudgeRelay } from './judge-relay.ts';
// Not through the fast engine's index: that loads node-llama-cpp, which this process never does.
import { EngineProcess, type FastGenerator } from '../fast-engine/engine-process.ts';
import { EngineRefusal } from '../fast-engine/refusals.ts';

/** Local files of the model a request runs, for the engine it asked for. */
export type ModelFiles =
  | { engine: 'transformers'; model: string; adapter?: string }
  | { engine: 'llama.cpp'; gguf: string; lora?: string };

export interface InferenceEnginesOptions {
  /** The warm ML core; default: one on CORE_PYTHON with the INFERENCE_MEMORY_BYTES budget. */
  core?: CoreServer;
  /** Makes the fast engine on first use; default: an EngineProcess with the same budget. */
  createFastEngine?: () => Promise<FastGenerator>;
}

export class InferenceEngines {
  readonly core: CoreServer;
  private fast: Promise<FastGenerator> | undefined;

  constructor(
    private readonly platform: Platform,
    private readonly options: InferenceEnginesOptions = {},
  ) {
    const { config, logger } = platform;
    this.core =
      options.core ??
      new CoreServer({
        ...(config.CORE_PYTHON ? { python: config.CORE_PYTHON } : {}),
        memoryBudgetBytes: config.INFERENCE_MEMORY_BYTES,
        env: { HF_ENDPOINT: config.HF_ENDPOINT },
        onLog: (event) => logger.info({ core: event.message }, 'ML core server'),
        onStderr: (line) => logger.debug({ core: line }),
      });
  }

  /** One generated text per conversation, with how it ended and its token counts. `onText` gets the text as it is
   *  generated: from llama.cpp token by token; transformers generates a batch at once, so there each conversation's
   *  whole text is one delta, when the batch is done. `progress` is told when a first use starts an engine. */
  async generate(
    files: ModelFiles,
    conversations: PlainMessage[][],
    settings: GenerationSettings,
    signal: AbortSignal,
    onText?: (delta: StreamDelta) => void,
    progress?: (message: string) => void,
  ): Promise<InferResult> {
    const format = settings.response_format?.type ?? 'text';
    if (settings.forced_call && format !== 'text') throw invalidField(['body', 'response_format'], 'response_format cannot be combined with tool_choice required or a named function (the answer is the call); leave one out');
    if (files.engine === 'transformers') {
      if (format !== 'text') {
        throw invalidField(['body', 'response_format'], `response_format ${format} needs the fast engine (llama.cpp grammar); this model runs on transformers`, 'not_available');
      }
      if (this.core.pid === undefined) this.tell(progress, 'starting the ML core (transformers) on this worker: its libraries load once, then the model');
      const answer = await this.core
        .generate(
          {
            model: files.model,
            ...(files.adapter ? { adapter: files.adapter } : {}),
            conversations,
            max_new_tokens: settings.max_new_tokens,
            temperature: samplingTemperature(settings.temperature),
            ...(settings.top_p !== undefined ? { top_p: settings.top_p } : {}),
            ...(settings.seed !== undefined ? { seed: settings.seed } : {}),
            ...(settings.stop ? { stop: settings.stop } : {}),
            ...(settings.tools ? { tools: settings.tools } : {}),
            ...(settings.forced_call ? { forced_call: settings.forced_call } : {}),
          },
          { signal, onCancelled: this.cancelled('transformers'), ...(progress ? { onProgress: progress } : {}) },
        )
        .catch((err: unknown) => {
          // What the core refuses about the request itself (a prompt longer than the model's context) is the client's.
          if (!signal.aborted && err instanceof CoreServerError && err.code === 'validation') throw invalidField(['body', 'messages'], err.message);
          return rethrow(err, signal, 'ml core', 'the ML core could not run the model');
        });
      const texts = answer.texts.map(storable);
      for (const [index, text] of texts.entries()) if (text !== '') onText?.({ index, text });
      return { results: texts, details: coreDetails(answer) };
    }
    if (!this.fast) this.tell(progress, 'starting llama.cpp on this worker (once)');
    const engine = await this.fastEngine();
    const grammar = settings.forced_call ? { grammar: { type: 'tool_call' as const, ...settings.forced_call } }
      : settings.response_format && settings.response_format.type !== 'text' ? { grammar: settings.response_format } : {};
    const generations = await engine
      .generate({
        modelPath: files.gguf,
        ...(files.lora ? { loraPath: files.lora } : {}),
        conversations,
        ...(settings.tools ? { tools: settings.tools } : {}),
        options: {
          maxNewTokens: settings.max_new_tokens,
          temperature: samplingTemperature(settings.temperature),
          ...(settings.top_p !== undefined ? { topP: settings.top_p } : {}),
          ...(settings.seed !== undefined ? { seed: settings.seed } : {}),
          ...(settings.stop ? { stop: settings.stop } : {}),
          ...grammar,
        },
        ...(onText ? { onText: (index: number, text: string) => onText({ index, text: storable(text) }) } : {}),
        signal,
        onCancelled: this.cancelled('llama.cpp'),
      })
      .catch((err: unknown) => {
        if (err instanceof EngineRefusal) throw refusedRequest(err, settings);
        return rethrow(err, signal, 'fast engine', 'llama.cpp could not run the model');
      });
    return {
      results: generations.map((g) => storable(g.text)),
      details: generations.map((g) => ({ finish_reason: g.finishReason, prompt_tokens: g.promptTokens, completion_tokens: g.tokens.length })),
    };
  }

  /** Scores with the nine metrics in the warm ML core (the BERTScore encoder stays loaded there). */
  score(params: EvaluateParams, signal: AbortSignal): Promise<Scored> {
    return this.core.evaluate(params, { signal }).catch((err: unknown) => rethrow(err, signal, 'ml core', 'the ML core could not score the predictions'));
  }

  /** Outputs graded in the warm ML core (graders.py; python graders in its sandbox, judges through a relay that runs
   *  them with `userId`'s rights). A grader the core refuses (python that does not compile, no sandbox on this machine)
   *  is the caller's 400 at body.grader. */
  grade(work: GradePayload, userId: string, signal: AbortSignal): Promise<GradeResult> {
    return withJudgeRelay(this.platform, userId, [work.grader], (relay) => this.core.grade({ ...work, ...(relay ? { judge: { url: relay.url, token: relay.token } } : {}) }, { signal })).then(
      ({ rewards, sub_rewards, errors, error_kinds, elapsed_seconds }) => ({ rewards, sub_rewards, errors, error_kinds, elapsed_seconds }),
      (err: unknown) => {
        if (err instanceof CoreServerError && err.code === 'validation' && !signal.aborted) throw refusedGrader(err);
        return rethrow(err, signal, 'ml core', 'the ML core could not grade');
      },
    );
  }

  /** What a cancelled generation had cost when its engine stopped it (the client went away, the time limit passed):
   *  stopping at the next token, it should be a few tokens past the cancel. */
  private cancelled(engine: ModelFiles['engine']): (tokens: number) => void {
    return (tokens) => {
      this.platform.metrics.cancelledTokens.observe({ engine }, tokens);
      this.platform.logger.info({ engine, tokens }, 'generation cancelled');
    };
  }

  /** A first use's wait, in the log and to the request that waits. */
  private tell(progress: ((message: string) => void) | undefined, message: string): void {
    this.platform.logger.info(message);
    progress?.(message);
  }

  async close(): Promise<void> {
    const fast = this.fast;
    this.fast = undefined;
    await Promise.all([this.core.close(), fast?.then((engine) => engine.dispose(), () => undefined)]);
  }

  private fastEngine(): Promise<FastGenerator> {
    this.fast ??= (
      this.options.createFastEngine ??
      (async () => {
        const { INFERENCE_MEMORY_BYTES, FAST_ENGINE_THREADS, FAST_ENGINE_SEQUENCES, FAST_ENGINE_SEQUENCES_PER_CONTEXT } = this.platform.config;
        return new EngineProcess({
          memoryBudgetBytes: INFERENCE_MEMORY_BYTES,
          maxParallel: FAST_ENGINE_SEQUENCES,
          ...(FAST_ENGINE_SEQUENCES_PER_CONTEXT ? { sequencesPerContext: FAST_ENGINE_SEQUENCES_PER_CONTEXT } : {}),
          ...(FAST_ENGINE_THREADS ? { threads: FAST_ENGINE_THREADS } : {}),
        });
      })
    )().catch((err: unknown) => {
      this.fast = undefined;
      throw new ServiceUnavailable('fast engine', `llama.cpp could not be started: ${(err as Error).message}`);
    });
    return this.fast;
  }
}

/** How each of the core's generations ended and what it cost (a core that does not say is older than this worker). */
function coreDetails(answer: Generated): GenerationDetail[] {
  const { finish_reasons: reasons, prompt_tokens: prompts } = answer;
  if (!reasons || !prompts) throw new ServiceUnavailable('ml core', 'the ML core did not report finish reasons and prompt tokens; it is older than this worker: restart the worker');
  return answer.token_ids.map((ids, i) => ({ finish_reason: reasons[i]!, prompt_tokens: prompts[i]!, completion_tokens: ids.length }));
}

/** The time limit's own error when it passed; otherwise a 503 that says what failed. */
/** Generated text as it can be answered and stored: a model may emit U+0000 (a byte-level tokenizer has a token for
 *  it; the tiny random model does), which PostgreSQL cannot store (evaluation samples) and the documents promise no
 *  string holds. It becomes U+FFFD, as any byte that is no character does. */
function storable(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}

function rethrow(err: unknown, signal: AbortSignal, dependency: string, what: string): never {
  if (signal.aborted) throw signal.reason;
  if (err instanceof Error) throw new ServiceUnavailable(dependency, `${what}: ${err.message}`);
  throw err;
}

/** What the fast engine refused, as the caller's 400 at the field its kind names (never read from its words). */
export function refusedRequest(err: EngineRefusal, settings: Pick<GenerationSettings, 'forced_call'>): Error {
  return invalidField(['body', err.kind === 'prompt_too_long' ? 'messages' : settings.forced_call ? 'tools' : 'response_format'], err.message);
}

/** A grader the ML core refused, as the caller's 400 at the field the core names (`field`, "grader.source"); the
 *  words without that field in front, which the error already names (/v1 writes "param: message"). */
export function refusedGrader(err: CoreServerError): Error {
  if (!err.field) return invalidField(['body', 'grader'], err.message);
  const words = err.message.startsWith(`${err.field}: `) ? err.message.slice(err.field.length + 2) : err.message;
  return invalidField(['body', ...fieldKeys(err.field)], words);
}
