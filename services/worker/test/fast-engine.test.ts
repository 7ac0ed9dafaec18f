// Parity of the fast engine (llama.cpp on the core's GGUF export) with transformers (core generate) on tiny models of
// every architecture the export supports; then what the OpenAI-style options do (stop, JSON grammars, streaming).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GgmlType, GgufFileType, readGgufFileInfo } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlainMessage } from '@ftp/schema';
import { FastEngine, promptText, UnsupportedSchemaError, type GenerateRequest, type GenerationOptions } from '../src/fast-engine/index.ts';
import { capacityFor } from '../src/fast-engine/shared-context.ts';
import { agreement, buildTinyFixtures, TINY_ARCHITECTURES, type TinyFixtures } from './fast-engine-fixtures/fixtures.ts';

const MAX_NEW_TOKENS = 40; // as build_tiny.py
const MIN_COMPARED_TOKENS = 32;

let fx: TinyFixtures;
let engine: FastEngine;

beforeAll(async () => {
  fx = buildTinyFixtures();
  engine = await FastEngine.create({ gpu: false, threads: 1 });
}, 300_000); // ~1 min on a 2-core machine: builds and teaches five tiny models

afterAll(async () => {
  await engine?.dispose();
  if (fx) rmSync(fx.root, { recursive: true, force: true });
});

const OLLAMA_TEMPLATE = fileURLToPath(new URL('../../../test/tools/ollama-template/', import.meta.url));
const GO = existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : 'go'; // the official tarball, else Debian's

/** The Modelfile's TEMPLATE rendered for each conversation (with its tools, if any) as Ollama renders it: Go's
 *  text/template with Ollama's data and functions (test/tools). */
function renderModelfile(modelfile: string, conversations: readonly unknown[][], tools?: unknown[]): string[] {
  const template = /TEMPLATE """([\s\S]*?)"""/.exec(modelfile)?.[1];
  if (template === undefined) throw new Error(`no TEMPLATE in the Modelfile:\n${modelfile}`);
  const out = execFileSync(GO, ['run', '.'], {
    cwd: OLLAMA_TEMPLATE,
    input: JSON.stringify({ template, messages: conversations, tools: tools ? conversations.map(() => tools) : [] }),
    env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
  });
  return JSON.parse(out.toString()) as string[];
}

/** The text with every JSON object in it written one way (sorted keys, no spaces): Ollama writes the tools and the
 *  call arguments as Go's compact JSON, where a Jinja template may indent them or keep their own key order. */
function withCanonicalJson(text: string): string {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(canonical) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])])) : v;
  let out = '';
  for (let i = 0; i < text.length; ) {
    const end = text[i] === '{' ? objectEnd(text, i) : -1;
    const parsed = end > 0 ? tryParse(text.slice(i, end)) : undefined;
    if (parsed === undefined) {
      out += text[i++];
      continue;
    }
    out += JSON.stringify(canonical(parsed));
    i = end;
  }
  return out;
}

/** Where the brace at `start` closes, strings read as JSON reads them; -1 when it does not. */
function objectEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i + 1;
  }
  return -1;
}

function tryParse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

interface Family {
  jinja: string[];
  modelfile: string;
  tool_conversations?: unknown[][];
  tools?: unknown[];
  jinja_tools?: string[];
}

describe('the Modelfile template of other chat template families', () => {
  const families = () => JSON.parse(readFileSync(join(fx.root, 'families.json'), 'utf8')) as Record<string, Family>;

  it.each(['qwen2.5', 'llama3', 'qwen2.5-tools', 'llama3-tools'])('%s: Ollama renders what the Jinja template renders', (family) => {
    const { jinja, modelfile } = families()[family]!;
    // Llama 3 trims the content in Jinja; the prompts have no surrounding spaces, so the Go template agrees.
    expect(renderModelfile(modelfile, fx.prompts)).toEqual(jinja);
  });

  it.each(['qwen2.5-tools', 'llama3-tools'])('%s: with tools, Ollama writes the tools, the calls and their results where the published template does', (family) => {
    const { modelfile, tool_conversations: conversations, tools, jinja_tools: jinja } = families()[family]!;
    const rendered = renderModelfile(modelfile, conversations!, tools);
    expect(rendered.map(withCanonicalJson)).toEqual(jinja!.map(withCanonicalJson));
    expect(rendered.every((text) => text.includes('get_weather') && text.includes('get_time'))).toBe(true);
    // Ollama reads a call from the model's answer after the text that opens the `if .ToolCalls` branch.
    const template = /TEMPLATE """([\s\S]*?)"""/.exec(modelfile)![1]!;
    const opening = /\{\{ if \$calls := \.ToolCalls \}\}([^{]*)/.exec(template)?.[1]?.trim();
    expect(opening).toBe(family.startsWith('qwen') ? '<tool_call>' : '');
  });
});

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

describe.each(TINY_ARCHITECTURES)('fast engine on the tiny %s model', (architecture) => {
  const generate = (file: string, loraFile?: string) => {
    const { dir } = fx.architectures[architecture];
    return engine.generate({
      modelPath: join(dir, file),
      ...(loraFile ? { loraPath: join(dir, loraFile) } : {}),
      conversations: fx.prompts,
      options: { maxNewTokens: MAX_NEW_TOKENS },
    });
  };

  it('f16 GGUF gives transformers greedy token ids exactly, for at least 32 new tokens', async () => {
    const { hf } = fx.architectures[architecture];
    const out = await generate('tiny-f16/model.gguf');
    for (const [i, expected] of hf.base.entries()) {
      expect(expected.token_ids.length).toBeGreaterThanOrEqual(MIN_COMPARED_TOKENS); // no early end of turn
      expect(out[i]!.tokens).toEqual(expected.token_ids);
    }
  });

  it('q8_0 GGUF agrees with transformers on at least 90% of tokens', async () => {
    const { hf } = fx.architectures[architecture];
    const out = await generate('tiny-q8_0/model.gguf');
    expect(mean(hf.base.map((expected, i) => agreement(out[i]!.tokens, expected.token_ids)))).toBeGreaterThanOrEqual(0.9);
  });

  it('one chat template: training, the merged folder, the GGUF (llama.cpp) and the Modelfile (Ollama) render the same prompts', async () => {
    const { dir } = fx.architectures[architecture];
    const rendered = JSON.parse(readFileSync(join(dir, 'rendered.json'), 'utf8')) as { training: string[]; merged: string[]; training_bos: string | null };
    const gguf = join(dir, 'merged-f16', 'model.gguf');
    const llamaCpp = await engine.models.with(gguf, async (model) => fx.prompts.map((p) => promptText(model, p)));
    const modelfile = renderModelfile(readFileSync(join(dir, 'merged-f16', 'Modelfile'), 'utf8'), fx.prompts);
    // Ollama and llama.cpp add the BOS token themselves; the texts are compared after it.
    const bos = rendered.training_bos ?? '';
    const afterBos = (texts: string[]) => texts.map((t) => (bos && t.startsWith(bos) ? t.slice(bos.length) : t));
    expect(afterBos(rendered.merged)).toEqual(afterBos(rendered.training));
    expect(afterBos(llamaCpp)).toEqual(afterBos(rendered.training));
    expect(modelfile).toEqual(afterBos(rendered.training));
  });

  it('base + GGUF LoRA adapter equals the merged model (transformers), and differs from the base', async () => {
    const { hf } = fx.architectures[architecture];
    const out = await generate('tiny-f16/model.gguf', 'lora/adapter.gguf');
    expect(out.map((g) => g.tokens)).toEqual(hf.merged.map((g) => g.token_ids));
    expect(out.map((g) => g.text)).toEqual(hf.merged.map((g) => g.text));
    for (const g of hf.merged) expect(g.token_ids.length).toBeGreaterThanOrEqual(MIN_COMPARED_TOKENS);
    expect(hf.merged.map((g) => g.token_ids)).not.toEqual(hf.base.map((g) => g.token_ids));
  });
});

describe('fast engine on q4_k_m', () => {
  it('loads the core\'s Q4_K_M file (llama.cpp\'s Q4_K/Q6_K mix) and generates at least 70% of the f16 tokens', async () => {
    const file = (q: string) => join(fx.kQuantDir, `tiny-${q}`, 'model.gguf');
    const info = await readGgufFileInfo(file('q4_k_m'));
    expect(info.metadata.general.file_type).toBe(GgufFileType.MOSTLY_Q4_K_M);
    const types = new Set(info.fullTensorInfo?.map((t) => t.ggmlType));
    expect([...types]).toEqual(expect.arrayContaining([GgmlType.Q4_K, GgmlType.Q6_K]));
    const options = { maxNewTokens: MAX_NEW_TOKENS };
    const f16 = await engine.generate({ modelPath: file('f16'), conversations: fx.prompts, options });
    const q4 = await engine.generate({ modelPath: file('q4_k_m'), conversations: fx.prompts, options });
    for (const g of f16) expect(g.tokens.length).toBeGreaterThanOrEqual(MIN_COMPARED_TOKENS);
    expect(mean(f16.map((g, i) => agreement(q4[i]!.tokens, g.tokens)))).toBeGreaterThanOrEqual(0.7);
  });
});

describe('fast engine', () => {
  const llama = () => fx.architectures.llama.dir;

  it('stops at max_new_tokens, batches more conversations than parallel slots, and samples reproducibly', async () => {
    const modelPath = join(llama(), 'tiny-f16', 'model.gguf');
    const many = [...fx.prompts, ...fx.prompts, ...fx.prompts];
    const short = await engine.generate({ modelPath, conversations: many, options: { maxNewTokens: 5 } });
    expect(short).toHaveLength(many.length);
    for (const g of short) expect(g.tokens.length).toBeLessThanOrEqual(5);
    expect(short[4]!.tokens).toEqual(short[0]!.tokens);
    // Sampling on the untaught model, whose choices are close to even: on the taught one any seed picks its answer.
    const untaught = join(fx.untaughtDir, 'tiny-f16', 'model.gguf');
    const sampled = { maxNewTokens: 8, temperature: 1.5, topP: 0.9, seed: 7 };
    const a = await engine.generate({ modelPath: untaught, conversations: fx.prompts, options: sampled });
    const b = await engine.generate({ modelPath: untaught, conversations: fx.prompts, options: sampled });
    const other = await engine.generate({ modelPath: untaught, conversations: fx.prompts, options: { ...sampled, seed: 100 } });
    expect(a.map((g) => g.tokens)).toEqual(b.map((g) => g.tokens));
    expect(other.map((g) => g.tokens)).not.toEqual(a.map((g) => g.tokens));
  });

  it('keeps models in an LRU: most recent last, unloaded above the memory budget', async () => {
    const f16 = join(llama(), 'tiny-f16', 'model.gguf');
    const q8 = join(llama(), 'tiny-q8_0', 'model.gguf');
    const conversations = [fx.prompts[0]!];
    const roomy = await FastEngine.create({ gpu: false, threads: 1, memoryBudgetBytes: 2 ** 30 });
    const tight = await FastEngine.create({ gpu: false, threads: 1, memoryBudgetBytes: 1 });
    try {
      for (const modelPath of [q8, f16, q8]) {
        await roomy.generate({ modelPath, conversations, options: { maxNewTokens: 2 } });
        await tight.generate({ modelPath, conversations, options: { maxNewTokens: 2 } });
      }
      expect(roomy.models.paths).toEqual([f16, q8]);
      expect(tight.models.paths).toEqual([]); // nothing in use, nothing fits
    } finally {
      await Promise.all([roomy.dispose(), tight.dispose()]);
    }
  });

  it('fails clearly on a missing LoRA file', async () => {
    await expect(
      engine.generate({ modelPath: join(llama(), 'tiny-f16', 'model.gguf'), loraPath: join(llama(), 'nope.gguf'), conversations: fx.prompts }),
    ).rejects.toThrow(/ENOENT/);
  });
});

describe('fast engine: concurrent requests share warm contexts', () => {
  const llama = () => fx.architectures.llama;
  const taught = () => join(llama().dir, 'tiny-f16', 'model.gguf');
  const options = { maxNewTokens: MAX_NEW_TOKENS };
  const state = (e: FastEngine, modelPath = taught()) => e.models.with(modelPath, async (_model, contexts) => contexts.state);
  /** The context size of short chats: 1024, or the model's own when it is smaller (the tiny models': 512). */
  const chatContext = () => engine.models.with(taught(), async (model) => Math.min(1024, model.trainContextSize));

  it('requests that come together are decoded as sequences of one context, each with the answer it gets alone', async () => {
    const shared = await FastEngine.create({ gpu: false, threads: 1, maxParallel: 4, sequencesPerContext: 4 });
    try {
      const alone = [];
      for (const prompt of fx.prompts) alone.push(...(await shared.generate({ modelPath: taught(), conversations: [prompt], options })));
      let lent = 0;
      const together = await Promise.all(fx.prompts.map(async (prompt) => {
        const [generation] = await shared.generate({
          modelPath: taught(),
          conversations: [prompt],
          options,
          onText: () => void state(shared).then(([group]) => { lent = Math.max(lent, group!.lent); }),
        });
        return generation!;
      }));
      expect(together.map((g) => g.tokens)).toEqual(alone.map((g) => g.tokens));
      expect(together.map((g) => g.tokens)).toEqual(llama().hf.base.map((g) => g.token_ids)); // and transformers' own
      expect(lent).toBe(4); // all four at once, on the one context
      expect(await state(shared)).toEqual([{ contextSize: await chatContext(), contexts: 1, sequences: 4, lent: 0, waiting: 0 }]);
    } finally {
      await shared.dispose();
    }
  });

  it('on a CPU a context holds one sequence; requests beyond the limit wait their turn, and one waiting can be cancelled', async () => {
    const two = await FastEngine.create({ gpu: false, threads: 1, maxParallel: 2 });
    try {
      const controller = new AbortController();
      let seen: Awaited<ReturnType<typeof state>> | undefined;
      // While answers stream: once both sequences are lent and two requests wait, the last one is cancelled.
      const onText = () => void state(two).then((s) => {
        if (seen || s[0]?.lent !== 2 || s[0].waiting !== 2) return;
        seen = s;
        controller.abort(new Error('the request timed out'));
      });
      const running = fx.prompts.slice(0, 3).map((prompt) => two.generate({ modelPath: taught(), conversations: [prompt], options, onText }));
      const cancelled = two.generate({ modelPath: taught(), conversations: [fx.prompts[3]!], options, signal: controller.signal });
      await expect(cancelled).rejects.toThrow('the request timed out');
      expect(seen).toEqual([{ contextSize: await chatContext(), contexts: 2, sequences: 2, lent: 2, waiting: 2 }]);
      const answers = (await Promise.all(running)).flat();
      expect(answers.map((g) => g.tokens)).toEqual(llama().hf.base.slice(0, 3).map((g) => g.token_ids));
      expect(await state(two)).toEqual([{ contextSize: await chatContext(), contexts: 2, sequences: 2, lent: 0, waiting: 0 }]);
    } finally {
      await two.dispose();
    }
  });

  it('gives the contexts back when requests stop, and keeps the model loaded', async () => {
    const brief = await FastEngine.create({ gpu: false, threads: 1, contextIdleMs: 50 });
    try {
      await brief.generate({ modelPath: taught(), conversations: fx.prompts, options: { maxNewTokens: 4 } });
      await expect.poll(() => state(brief)).toEqual([]);
      expect(brief.models.paths).toEqual([taught()]);
      const [again] = await brief.generate({ modelPath: taught(), conversations: [fx.prompts[0]!], options });
      expect(again!.tokens).toEqual(llama().hf.base[0]!.token_ids);
    } finally {
      await brief.dispose();
    }
  });

  it("an adapter's requests and the base model's at the same time each get their own answers", async () => {
    const lora = join(llama().dir, 'lora', 'adapter.gguf');
    const [base, adapted] = await Promise.all([
      engine.generate({ modelPath: taught(), conversations: fx.prompts, options }),
      engine.generate({ modelPath: taught(), loraPath: lora, conversations: fx.prompts, options }),
    ]);
    expect(base.map((g) => g.tokens)).toEqual(llama().hf.base.map((g) => g.token_ids));
    expect(adapted.map((g) => g.tokens)).toEqual(llama().hf.merged.map((g) => g.token_ids));
    expect((await state(engine)).map((g) => g.loraPath ?? 'base').sort()).toEqual([lora, 'base'].sort());
  });

  it('sizes the sequences from memory: fewer when their contexts would not fit, never none', async () => {
    const spec = { contextSize: 1024, sequencesPerContext: 8, maxSequences: 8 };
    await engine.models.with(taught(), async (model) => {
      const need = (sequences: number) => {
        const r = model.fileInsights.estimateContextResourceRequirements({ contextSize: 1024, sequences, modelGpuLayers: 0 });
        return r.cpuRam + r.gpuVram;
      };
      expect(capacityFor(model, { ...spec, memoryBytes: 2 ** 40 })).toEqual({ perContext: 8, limit: 8 });
      expect(capacityFor(model, { ...spec, memoryBytes: need(3) })).toEqual({ perContext: 3, limit: 3 });
      expect(capacityFor(model, { ...spec, sequencesPerContext: 1, memoryBytes: 8 * need(1) })).toEqual({ perContext: 1, limit: 8 });
      // Room for 3 contexts of one: contexts of more sequences, as many as fit, rather than requests waiting.
      const tight = capacityFor(model, { ...spec, sequencesPerContext: 1, memoryBytes: 3 * need(1) });
      expect(tight.limit).toBeGreaterThanOrEqual(3);
      expect(Math.ceil(tight.limit / tight.perContext) * need(tight.perContext)).toBeLessThanOrEqual(3 * need(1));
      expect(capacityFor(model, { ...spec, memoryBytes: 1 })).toEqual({ perContext: 1, limit: 1 });
    });
  });
});

describe('fast engine: stop strings, JSON grammars, streaming, usage', () => {
  const taught = () => join(fx.architectures.llama.dir, 'tiny-f16', 'model.gguf');
  const generate = (options: GenerationOptions, onText?: GenerateRequest['onText'], modelPath = taught()) =>
    engine.generate({ modelPath, conversations: fx.prompts, options, ...(onText ? { onText } : {}) });
  const SHORT_ANSWER = { type: 'object', properties: { answer: { type: 'string', maxLength: 8 } }, required: ['answer'], additionalProperties: false };

  it('ends at the end of turn (stop) or at max_new_tokens (length)', async () => {
    const whole = await generate({ maxNewTokens: 150 }); // the taught answers are about 100 tokens
    const cut = await generate({ maxNewTokens: 40 });
    expect(whole.map((g) => g.finishReason)).toEqual(['stop', 'stop', 'stop', 'stop']);
    expect(cut.map((g) => g.finishReason)).toEqual(['length', 'length', 'length', 'length']);
    for (const [i, g] of cut.entries()) expect(whole[i]!.text.startsWith(g.text) && g.tokens.length === 40).toBe(true);
  });

  it('stops before the first stop string, one that spans several tokens too, and leaves it out', async () => {
    const plain = await generate({ maxNewTokens: 40 });
    expect(plain[0]!.text).toContain('Paris. Paris');
    expect(plain[1]!.text).toContain('thank you');
    const stopped = await generate({ maxNewTokens: 40, stop: ['Paris. Paris', 'thank you'] });
    expect(stopped.map((g) => g.text)).toEqual(['The capital of France is ', 'Hello there! I am fine, ', plain[2]!.text, plain[3]!.text]);
    expect(stopped.map((g) => g.finishReason)).toEqual(['stop', 'stop', 'length', 'length']);
    expect(stopped[0]!.tokens).toEqual(plain[0]!.tokens.slice(0, stopped[0]!.tokens.length)); // up to the stop's last token
  });

  it('counts the prompt and the completion as tokenizing them does', async () => {
    const generations = await generate({ maxNewTokens: 40 });
    await engine.models.with(taught(), async (model) => {
      for (const [i, g] of generations.entries()) {
        expect(g.promptTokens).toBe(model.tokenize(promptText(model, fx.prompts[i]!), true).length);
        expect(g.tokens.length).toBe(model.tokenize(g.text).length);
      }
    });
  });

  it('json_object: greedy text is a JSON object wherever it ended by itself, even on an untaught model', async () => {
    // The untaught model ends some answers at `{}`; others run on inside a string until max_new_tokens (cut JSON,
    // honestly `length`). Without the grammar it writes no JSON at all.
    const untaught = join(fx.untaughtDir, 'tiny-f16', 'model.gguf');
    const json = await generate({ maxNewTokens: 60, grammar: { type: 'json_object' } }, undefined, untaught);
    const ended = json.filter((g) => g.finishReason === 'stop');
    expect(ended.length).toBeGreaterThan(0);
    for (const g of ended) expect(JSON.parse(g.text)).toBeTypeOf('object');
    for (const g of json) expect(g.text.startsWith('{')).toBe(true);
    const free = await generate({ maxNewTokens: 60 }, undefined, untaught);
    expect(free.some((g) => g.text.startsWith('{'))).toBe(false);
  });

  it('json_schema: every answer parses and matches the schema', async () => {
    const answers = await generate({ maxNewTokens: 60, grammar: { type: 'json_schema', schema: SHORT_ANSWER } });
    for (const g of answers) {
      expect(g.finishReason).toBe('stop');
      const parsed = JSON.parse(g.text) as Record<string, unknown>;
      expect(Object.keys(parsed)).toEqual(['answer']);
      expect(typeof parsed.answer === 'string' && parsed.answer.length <= 8).toBe(true);
      expect(g.text).toBe(g.text.trim()); // the grammar's closing newlines are not part of the answer
    }
  });

  it('refuses a schema the grammar would not honour, naming the keyword', async () => {
    const refused = async (schema: Record<string, unknown>) => generate({ grammar: { type: 'json_schema', schema } }).catch((err: unknown) => err);
    const pattern = await refused({ type: 'object', properties: { a: { type: 'string', pattern: '^x+$' } } });
    expect(pattern).toBeInstanceOf(UnsupportedSchemaError);
    expect((pattern as Error).message).toContain('schema.properties.a.pattern');
    expect(await refused({})).toBeInstanceOf(UnsupportedSchemaError); // node-llama-cpp would generate `null`
    expect(await refused({ type: 'object', properties: {}, required: ['a'] })).toBeInstanceOf(UnsupportedSchemaError);
    expect(await refused({ const: { a: 1 } })).toBeInstanceOf(UnsupportedSchemaError); // the converter's own refusal
  });

  it.each([
    ['plain text', { maxNewTokens: 40 }],
    ['stop strings', { maxNewTokens: 40, stop: ['Paris. Paris', 'thank you'] }],
    ['a JSON schema', { maxNewTokens: 60, grammar: { type: 'json_schema', schema: SHORT_ANSWER } }],
  ] as const)('streams %s as pieces that add up to the final text', async (_name, options) => {
    const pieces: string[][] = fx.prompts.map(() => []);
    const streamed = await generate(options, (index, delta) => pieces[index]!.push(delta));
    const whole = await generate(options);
    expect(streamed.map((g) => g.text)).toEqual(whole.map((g) => g.text));
    for (const [i, g] of streamed.entries()) {
      expect(pieces[i]!.join('')).toBe(g.text);
      expect(pieces[i]!.length).toBeGreaterThan(3); // as generated, not at the end
    }
  });
});
