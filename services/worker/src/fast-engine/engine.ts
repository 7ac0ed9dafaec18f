// The fast engine: batch chat generation on a GGUF with llama.cpp (node-llama-cpp's prebuilt binaries, no build step),
// with stop strings, JSON grammars and the text streamed as it is generated.
import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { getLlama, LlamaGrammarEvaluationState, LlamaLogLevel, LlamaText, type GbnfJsonSchema, type Llama, type LlamaContextSequence, type LlamaGrammar, type LlamaModel, type Token } from 'node-llama-cpp';
import type { PlainMessage } from '@ftp/schema';
import { promptTokens } from './chat-prompt.ts';
import { GeneratedText, type TextEnding } from './generated-text.ts';
import { grammarSchema, UnsupportedSchemaError } from './json-schema.ts';
import { PromptTooLong } from './refusals.ts';
import { ModelCache } from './model-cache.ts';
import { contextSizeFor, type SharedContextSpec } from './shared-context.ts';

export interface FastEngineOptions {
  /** Total size of loaded model weights kept warm; least recently used models are unloaded above it. */
  memoryBudgetBytes?: number;
  /** `auto` uses CUDA/Vulkan/Metal when present; `false` forces CPU. */
  gpu?: 'auto' | false;
  /** Conversations of one model and adapter decoded at the same time, whichever requests they come from (the
   *  sequences of its warm contexts; 1: one at a time). Others wait for a free one. */
  maxParallel?: number;
  /** Sequences of one context, whose tokens llama.cpp decodes together. Default: all of them on a GPU, 1 on a CPU
   *  (shared-context.ts says why). */
  sequencesPerContext?: number;
  /** What a model's warm contexts (KV caches and compute buffers) may take (default half the memory budget); fewer
   *  sequences when they would not fit. */
  contextMemoryBytes?: number;
  /** How long a model's contexts stay warm after its last request (default 60 s); the model itself stays loaded. */
  contextIdleMs?: number;
  /** CPU threads per context (default: one per core). 1 suits tiny models on a busy machine, where
   * llama.cpp's spinning thread barrier loses more to contention than a second thread gains. */
  threads?: number;
}

export interface GenerationOptions {
  maxNewTokens?: number; // default 256
  temperature?: number; // default 0 = greedy
  topP?: number; // default 1
  seed?: number; // sampling seed of the first conversation; the i-th uses seed + i
  /** Generation ends before the first of these; the text returned does not contain it. */
  stop?: readonly string[];
  /** Constrained decoding: the text is JSON (any object, or one that matches the schema; json-schema.ts says which
   *  schemas can be honoured). Ended by length, the JSON may be cut short. */
  grammar?: OutputGrammar;
}

export type OutputGrammar =
  | { type: 'json_object' }
  | { type: 'json_schema'; schema: Record<string, unknown> }
  /** A tool call: fixed text around JSON of the call's schema (tool_choice required or named). */
  | { type: 'tool_call'; schema: Record<string, unknown>; prefix: string; suffix: string };

export interface GenerateRequest {
  modelPath: string;
  /** A GGUF LoRA adapter (the core's `gguf --adapter`) applied over the model. */
  loraPath?: string;
  conversations: readonly (readonly PlainMessage[])[];
  /** OpenAI tool definitions every conversation is rendered with (the model's chat template writes them). */
  tools?: readonly unknown[];
  options?: GenerationOptions;
  /** Text of conversation `index` as it is generated; the pieces of one conversation add up to its final text. */
  onText?: (index: number, delta: string) => void;
  /** Stops generating at the next token (the request's time limit passed, its client went away); generate then
   *  rejects with its reason. */
  signal?: AbortSignal;
  /** Told, when `signal` stopped it, how many tokens the request's conversations had decoded in all. */
  onCancelled?: (decodedTokens: number) => void;
}

export interface Generation {
  text: string;
  /** Every token generated (a stop string's too), without the end-of-turn token. */
  tokens: Token[];
  promptTokens: number;
  /** `stop`: end of turn or a stop string; `length`: maxNewTokens, or the context is full. */
  finishReason: 'stop' | 'length';
}

export class FastEngine {
  private constructor(
    readonly llama: Llama,
    readonly models: ModelCache,
    /** What every shared context is made with, but for its adapter and size. */
    private readonly contextSettings: Omit<SharedContextSpec, 'loraPath' | 'contextSize'>,
  ) {}

  static async create(options: FastEngineOptions = {}): Promise<FastEngine> {
    const llama = await getLlama({ build: 'never', gpu: options.gpu ?? 'auto', logLevel: LlamaLogLevel.error });
    // On CPU node-llama-cpp lets contexts use max(4, cores) threads; on a 2-core machine that oversubscribes
    // the cores and llama.cpp's spinning barrier loses 2-3x decode speed. One thread per core, at most.
    if (llama.gpu === false) llama.maxThreads = Math.min(llama.maxThreads || Infinity, availableParallelism());
    const memoryBudgetBytes = options.memoryBudgetBytes ?? 8 * 2 ** 30;
    const cache = new ModelCache(llama, memoryBudgetBytes, options.contextIdleMs ?? 60_000);
    const maxSequences = options.maxParallel ?? 16;
    return new FastEngine(llama, cache, {
      sequencesPerContext: options.sequencesPerContext ?? (llama.gpu === false ? 1 : maxSequences),
      maxSequences,
      memoryBytes: options.contextMemoryBytes ?? memoryBudgetBytes / 2,
      ...(options.threads ? { threads: options.threads } : {}),
    });
  }

  async generate(request: GenerateRequest): Promise<Generation[]> {
    const options = resolveOptions(request.options);
    if (request.loraPath) await stat(request.loraPath); // a clear ENOENT instead of a native load failure
    const decoded = { tokens: 0 };
    try {
      return await this.decode(request, options, decoded);
    } catch (err) {
      if (request.signal?.aborted) request.onCancelled?.(decoded.tokens);
      throw err;
    }
  }

  private decode(request: GenerateRequest, options: ResolvedOptions, decoded: { tokens: number }): Promise<Generation[]> {
    return this.models.with(request.modelPath, async (model, contexts) => {
      const grammar = options.grammar ? await this.grammarFor(options.grammar) : undefined;
      const ending = textEnding(options.stop, grammar);
      const prompts = request.conversations.map((c) => promptTokens(model, c, request.tools));
      if (prompts.length === 0) return [];
      const longest = Math.max(...prompts.map((p) => p.length));
      if (longest + 1 > model.trainContextSize) {
        throw new PromptTooLong(`prompt of ${longest} tokens does not fit the model's ${model.trainContextSize}-token context`);
      }
      // Every conversation takes a sequence of the model's warm contexts for this adapter and size, as a request that
      // came alone would: conversations of one request and of requests running at the same time share their decodes.
      const spec = {
        ...this.contextSettings,
        ...(request.loraPath ? { loraPath: request.loraPath } : {}),
        contextSize: contextSizeFor(model, longest + options.maxNewTokens + 1),
      };
      const onText = request.onText;
      return Promise.all(prompts.map((prompt, i) => contexts.with(spec, (sequence) => {
        const text = new GeneratedText(model, ending, onText && ((delta) => onText(i, delta)));
        const sampling = { seed: options.seed + i, ...(grammar ? { grammar } : {}) };
        return generateOne(model, sequence, prompt, options, sampling, text, decoded, request.signal);
      }, request.signal)));
    });
  }

  /** The grammar a request asks for; an UnsupportedSchemaError for a schema it could not honour. */
  private async grammarFor(grammar: OutputGrammar): Promise<LlamaGrammar> {
    if (grammar.type === 'json_object') return this.llama.getGrammarFor('json');
    const where = grammar.type === 'tool_call' ? 'tools: the forced call (its parameters schema)' : 'response_format schema';
    let json: LlamaGrammar;
    try {
      json = await this.llama.createGrammarForJsonSchema<GbnfJsonSchema>(grammarSchema(grammar.schema, where));
    } catch (err) {
      if (err instanceof UnsupportedSchemaError) throw err;
      // What the keyword check lets through but the converter still refuses (an object as const, an enum that is no list).
      throw new UnsupportedSchemaError(`${where}: llama.cpp's grammar could not be made of it (${(err as Error).message})`);
    }
    if (grammar.type !== 'tool_call' || (grammar.prefix === '' && grammar.suffix === '')) return json;
    return this.llama.createGrammar({ grammar: wrappedJson(json, grammar.prefix, grammar.suffix), rootRuleName: 'tool-call-root' });
  }

  async dispose(): Promise<void> {
    await this.models.dispose();
    await this.llama.dispose();
  }
}

/** The JSON grammar between the family's call text (GBNF string literals escape as JSON strings do). Its root ends
 *  in the run of newlines node-llama-cpp's chat stops on; inside a call that run is cut, or it would never end. */
function wrappedJson(json: LlamaGrammar, prefix: string, suffix: string): string {
  const ending = / "\\n\\n\\n\\n" \[\\n\]\*$/m;
  const lines = json.grammar.split('\n');
  const at = lines.findIndex((line) => line.startsWith(`${json.rootRuleName} ::= `));
  if (at < 0 || !ending.test(lines[at]!)) throw new Error(`node-llama-cpp's JSON grammar has a root this engine does not know: ${lines[at] ?? '(none)'}`);
  lines[at] = lines[at]!.replace(`${json.rootRuleName} ::= `, 'tool-call-json ::= ').replace(ending, '');
  return [...lines, `tool-call-root ::= ${JSON.stringify(prefix)} tool-call-json ${JSON.stringify(suffix)}`].join('\n');
}

type ResolvedOptions = Required<Omit<GenerationOptions, 'grammar'>> & Pick<GenerationOptions, 'grammar'>;

function resolveOptions(options: GenerationOptions = {}): ResolvedOptions {
  const resolved = { maxNewTokens: 256, temperature: 0, topP: 1, seed: 0, stop: [], ...options };
  if (!(resolved.maxNewTokens >= 1) || !(resolved.temperature >= 0) || !(resolved.topP > 0 && resolved.topP <= 1)) {
    throw new Error('maxNewTokens must be ≥ 1, temperature ≥ 0 and topP in (0, 1]');
  }
  return resolved;
}

/** Where texts end: the request's stop strings and what the grammar asks for. node-llama-cpp's JSON grammars end in
 *  a run of newlines that only its LlamaChat acts on (stopGenerationTriggers, trimWhitespaceSuffix): driving the
 *  sequence ourselves, we do it here. */
function textEnding(stop: readonly string[], grammar: LlamaGrammar | undefined): TextEnding {
  const triggers = (grammar?.stopGenerationTriggers ?? []).map((trigger) => {
    if (typeof trigger === 'string' || LlamaText.isLlamaText(trigger)) return trigger.toString();
    throw new Error('a grammar stop trigger made of tokens is not supported');
  });
  return { stops: [...stop, ...triggers], trimEnd: grammar?.trimWhitespaceSuffix ?? false };
}

async function generateOne(
  model: LlamaModel,
  sequence: LlamaContextSequence,
  prompt: Token[],
  options: ResolvedOptions,
  { seed, grammar }: { seed: number; grammar?: LlamaGrammar },
  text: GeneratedText,
  /** Every conversation of the request counts here what it decoded (what a cancelled request cost). */
  decoded: { tokens: number },
  signal?: AbortSignal,
): Promise<Generation> {
  const tokens: Token[] = [];
  let finishReason: Generation['finishReason'] = 'length';
  // node-llama-cpp samples with topK 40 / topP 0.95 unless told otherwise; transformers (the core) with neither.
  const sampler = options.temperature > 0 ? { temperature: options.temperature, topP: options.topP, topK: 0, seed } : {};
  // A grammar state follows one answer: the sampler accepts each token it picks into it.
  const constrained = grammar ? { grammarEvaluationState: new LlamaGrammarEvaluationState({ model, grammar }) } : {};
  const room = sequence.contextSize - prompt.length; // never let llama.cpp shift the prompt out of the context
  for await (const token of sequence.evaluate(prompt, { ...sampler, ...constrained, yieldEogToken: true })) {
    decoded.tokens += 1;
    signal?.throwIfAborted();
    if (model.isEogToken(token)) {
      finishReason = 'stop';
      break;
    }
    tokens.push(token);
    if (text.add(tokens)) {
      finishReason = 'stop';
      break;
    }
    if (tokens.length >= Math.min(options.maxNewTokens, room)) break;
  }
  return { text: text.finish(tokens), tokens, promptTokens: prompt.length, finishReason };
}
