// The fast engine: batch chat generation on a GGUF with llama.cpp (node-llama-cpp's prebuilt binaries, no build step).
import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { getLlama, LlamaLogLevel, type Llama, type LlamaContextSequence, type LlamaModel, type Token } from 'node-llama-cpp';
import { promptTokens, type ChatMessage } from './chat-prompt.ts';
import { ModelCache } from './model-cache.ts';

export interface FastEngineOptions {
  /** Total size of loaded model weights kept warm; least recently used models are unloaded above it. */
  memoryBudgetBytes?: number;
  /** `auto` uses CUDA/Vulkan/Metal when present; `false` forces CPU. */
  gpu?: 'auto' | false;
  /** Conversations generated in parallel on one context (llama.cpp batches their tokens together). */
  maxParallel?: number;
  /** CPU threads per context (default: one per core). 1 suits tiny models on a busy machine, where
   * llama.cpp's spinning thread barrier loses more to contention than a second thread gains. */
  threads?: number;
}

export interface GenerationOptions {
  maxNewTokens?: number; // default 256
  temperature?: number; // default 0 = greedy
  topP?: number; // default 1
  seed?: number; // sampling seed of the first conversation; the i-th uses seed + i
}

export interface GenerateRequest {
  modelPath: string;
  /** A GGUF LoRA adapter (the core's `gguf --adapter`) applied over the model. */
  loraPath?: string;
  conversations: readonly (readonly ChatMessage[])[];
  options?: GenerationOptions;
  /** Stops generating at the next token (the request's time limit passed); generate then rejects with its reason. */
  signal?: AbortSignal;
}

export interface Generation {
  text: string;
  tokens: Token[];
  promptTokens: number;
  finishReason: 'end_of_turn' | 'length';
}

export class FastEngine {
  private constructor(
    readonly llama: Llama,
    readonly models: ModelCache,
    private readonly maxParallel: number,
    private readonly threads: number | undefined,
  ) {}

  static async create(options: FastEngineOptions = {}): Promise<FastEngine> {
    const llama = await getLlama({ build: 'never', gpu: options.gpu ?? 'auto', logLevel: LlamaLogLevel.error });
    // On CPU node-llama-cpp lets contexts use max(4, cores) threads; on a 2-core machine that oversubscribes
    // the cores and llama.cpp's spinning barrier loses 2-3x decode speed. One thread per core, at most.
    if (llama.gpu === false) llama.maxThreads = Math.min(llama.maxThreads || Infinity, availableParallelism());
    const cache = new ModelCache(llama, options.memoryBudgetBytes ?? 8 * 2 ** 30);
    return new FastEngine(llama, cache, options.maxParallel ?? 16, options.threads);
  }

  async generate(request: GenerateRequest): Promise<Generation[]> {
    const options = resolveOptions(request.options);
    if (request.loraPath) await stat(request.loraPath); // a clear ENOENT instead of a native load failure
    return this.models.with(request.modelPath, async (model) => {
      const prompts = request.conversations.map((c) => promptTokens(model, c));
      if (prompts.length === 0) return [];
      const longest = Math.max(...prompts.map((p) => p.length));
      const parallel = Math.min(this.maxParallel, prompts.length);
      const contextSize = Math.min(model.trainContextSize, longest + options.maxNewTokens + 1);
      if (longest + 1 > contextSize) {
        throw new Error(`prompt of ${longest} tokens does not fit the model's ${model.trainContextSize}-token context`);
      }
      const context = await model.createContext({
        sequences: parallel,
        contextSize,
        ...(this.threads ? { threads: this.threads } : {}),
        ...(request.loraPath ? { lora: { adapters: [{ filePath: request.loraPath }] } } : {}),
      });
      try {
        const results: Generation[] = new Array(prompts.length);
        let next = 0;
        const worker = async (sequence: LlamaContextSequence) => {
          for (let i = next++; i < prompts.length; i = next++) {
            await sequence.clearHistory();
            results[i] = await generateOne(model, sequence, prompts[i]!, options, options.seed + i, request.signal);
          }
        };
        await Promise.all(Array.from({ length: parallel }, () => worker(context.getSequence())));
        return results;
      } finally {
        await context.dispose();
      }
    });
  }

  async dispose(): Promise<void> {
    await this.models.dispose();
    await this.llama.dispose();
  }
}

type ResolvedOptions = Required<GenerationOptions>;

function resolveOptions(options: GenerationOptions = {}): ResolvedOptions {
  const resolved = { maxNewTokens: 256, temperature: 0, topP: 1, seed: 0, ...options };
  if (!(resolved.maxNewTokens >= 1) || !(resolved.temperature >= 0) || !(resolved.topP > 0 && resolved.topP <= 1)) {
    throw new Error('maxNewTokens must be ≥ 1, temperature ≥ 0 and topP in (0, 1]');
  }
  return resolved;
}

async function generateOne(
  model: LlamaModel,
  sequence: LlamaContextSequence,
  prompt: Token[],
  options: ResolvedOptions,
  seed: number,
  signal?: AbortSignal,
): Promise<Generation> {
  const sampling = options.temperature > 0;
  const tokens: Token[] = [];
  let finishReason: Generation['finishReason'] = 'length';
  // node-llama-cpp samples with topK 40 / topP 0.95 unless told otherwise; transformers (the core) with neither.
  const sampler = sampling ? { temperature: options.temperature, topP: options.topP, topK: 0, seed } : {};
  const room = sequence.contextSize - prompt.length; // never let llama.cpp shift the prompt out of the context
  for await (const token of sequence.evaluate(prompt, sampler)) {
    signal?.throwIfAborted();
    if (model.isEogToken(token)) {
      finishReason = 'end_of_turn';
      break;
    }
    tokens.push(token);
    if (tokens.length >= Math.min(options.maxNewTokens, room)) break;
  }
  return { text: model.detokenize(tokens), tokens, promptTokens: prompt.length, finishReason };
}
