// The two ways a model runs on a worker, both kept warm for the life of the worker: transformers (+PEFT) in one
// long-lived ML core process (CoreServer, `ftcore serve`), and llama.cpp in this process (FastEngine, loaded on
// first use). Each keeps an LRU of loaded models within INFERENCE_MEMORY_BYTES. Their failures become the errors
// the API answers with (they cross the queue as data).
import { CoreServer, type EvaluateParams, type Scored, type ServeMessage } from '@ftp/core-client';
import { invalidField, ServiceUnavailable, type Platform } from '@ftp/platform';
import type { GenerationSettings } from '@ftp/jobs';
import type { FastEngine } from '../fast-engine/index.ts';

/** Local files of the model a request runs, for the engine it asked for. */
export type ModelFiles =
  | { engine: 'transformers'; model: string; adapter?: string }
  | { engine: 'llama.cpp'; gguf: string; lora?: string };

export interface InferenceEnginesOptions {
  /** The warm ML core; default: one on CORE_PYTHON with the INFERENCE_MEMORY_BYTES budget. */
  core?: CoreServer;
  /** Makes the fast engine on first use; default: FastEngine.create with the same budget. */
  createFastEngine?: () => Promise<FastEngine>;
}

export class InferenceEngines {
  readonly core: CoreServer;
  private fast: Promise<FastEngine> | undefined;

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

  /** One generated text per conversation. */
  async generate(files: ModelFiles, conversations: ServeMessage[][], settings: GenerationSettings, signal: AbortSignal): Promise<string[]> {
    if (files.engine === 'transformers') {
      const answer = await this.core
        .generate(
          {
            model: files.model,
            ...(files.adapter ? { adapter: files.adapter } : {}),
            conversations,
            max_new_tokens: settings.max_new_tokens,
            temperature: settings.temperature,
            ...(settings.top_p !== undefined ? { top_p: settings.top_p } : {}),
          },
          { signal },
        )
        .catch((err: unknown) => rethrow(err, signal, 'ml core', 'the ML core could not run the model'));
      return answer.texts;
    }
    const engine = await this.fastEngine();
    const generations = await engine
      .generate({
        modelPath: files.gguf,
        ...(files.lora ? { loraPath: files.lora } : {}),
        conversations,
        options: {
          maxNewTokens: settings.max_new_tokens,
          temperature: settings.temperature,
          ...(settings.top_p !== undefined ? { topP: settings.top_p } : {}),
        },
        signal,
      })
      .catch((err: unknown) => {
        if (!signal.aborted && /does not fit/.test(String((err as Error).message))) throw invalidField(['body', 'messages'], (err as Error).message);
        return rethrow(err, signal, 'fast engine', 'llama.cpp could not run the model');
      });
    return generations.map((g) => g.text);
  }

  /** Scores with the nine metrics in the warm ML core (the BERTScore encoder stays loaded there). */
  score(params: EvaluateParams, signal: AbortSignal): Promise<Scored> {
    return this.core.evaluate(params, { signal }).catch((err: unknown) => rethrow(err, signal, 'ml core', 'the ML core could not score the predictions'));
  }

  async close(): Promise<void> {
    const fast = this.fast;
    this.fast = undefined;
    await Promise.all([this.core.close(), fast?.then((engine) => engine.dispose(), () => undefined)]);
  }

  private fastEngine(): Promise<FastEngine> {
    this.fast ??= (
      this.options.createFastEngine ??
      (async () => {
        // Loaded on first use: node-llama-cpp costs most of a second to import.
        const { FastEngine } = await import('../fast-engine/index.ts');
        const { INFERENCE_MEMORY_BYTES, FAST_ENGINE_THREADS } = this.platform.config;
        return FastEngine.create({ memoryBudgetBytes: INFERENCE_MEMORY_BYTES, ...(FAST_ENGINE_THREADS ? { threads: FAST_ENGINE_THREADS } : {}) });
      })
    )().catch((err: unknown) => {
      this.fast = undefined;
      throw new ServiceUnavailable('fast engine', `llama.cpp could not be started: ${(err as Error).message}`);
    });
    return this.fast;
  }
}

/** The time limit's own error when it passed; otherwise a 503 that says what failed. */
function rethrow(err: unknown, signal: AbortSignal, dependency: string, what: string): never {
  if (signal.aborted) throw signal.reason;
  if (err instanceof Error) throw new ServiceUnavailable(dependency, `${what}: ${err.message}`);
  throw err;
}
