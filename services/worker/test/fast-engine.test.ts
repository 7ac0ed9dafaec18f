// Parity of the fast engine (llama.cpp on the core's GGUF export) with transformers (core generate) on a tiny model.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FastEngine } from '../src/fast-engine/index.ts';
import { agreement, buildTinyFixtures, type TinyFixtures } from './fast-engine-fixtures/fixtures.ts';

const MAX_NEW_TOKENS = 40; // as build_tiny.py

let fx: TinyFixtures;
let engine: FastEngine;

beforeAll(async () => {
  fx = buildTinyFixtures();
  engine = await FastEngine.create({ gpu: false, threads: 1 });
}, 300_000); // ~35 s on an idle 2-core machine; generous for a loaded one

afterAll(async () => {
  await engine?.dispose();
  if (fx) rmSync(fx.root, { recursive: true, force: true });
});

describe('fast engine on the tiny model', () => {
  it('f16 GGUF gives transformers greedy token ids exactly, for at least 32 new tokens', async () => {
    const out = await engine.generate({
      modelPath: join(fx.root, 'tiny-f16', 'model.gguf'),
      conversations: fx.prompts,
      options: { maxNewTokens: MAX_NEW_TOKENS },
    });
    for (const [i, hf] of fx.hf.base.entries()) {
      expect(hf.token_ids.length).toBeGreaterThanOrEqual(32);
      expect(out[i]!.tokens).toEqual(hf.token_ids);
    }
  });

  it('q8_0 GGUF agrees with transformers on at least 90% of tokens', async () => {
    const out = await engine.generate({
      modelPath: join(fx.root, 'tiny-q8_0', 'model.gguf'),
      conversations: fx.prompts,
      options: { maxNewTokens: MAX_NEW_TOKENS },
    });
    const scores = fx.hf.base.map((hf, i) => agreement(out[i]!.tokens, hf.token_ids));
    const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
    expect(mean).toBeGreaterThanOrEqual(0.9);
  });

  it('base + GGUF LoRA adapter equals the merged model (transformers), and differs from the base', async () => {
    const out = await engine.generate({
      modelPath: join(fx.root, 'tiny-f16', 'model.gguf'),
      loraPath: join(fx.root, 'adapter.gguf'),
      conversations: fx.prompts,
      options: { maxNewTokens: MAX_NEW_TOKENS },
    });
    expect(out.map((g) => g.tokens)).toEqual(fx.hf.merged.map((g) => g.token_ids));
    expect(out.map((g) => g.text)).toEqual(fx.hf.merged.map((g) => g.text));
    expect(fx.hf.merged.map((g) => g.token_ids)).not.toEqual(fx.hf.base.map((g) => g.token_ids));
  });

  it('stops at max_new_tokens, batches more conversations than parallel slots, and samples reproducibly', async () => {
    const modelPath = join(fx.root, 'tiny-f16', 'model.gguf');
    const many = [...fx.prompts, ...fx.prompts, ...fx.prompts];
    const short = await engine.generate({ modelPath, conversations: many, options: { maxNewTokens: 5 } });
    expect(short).toHaveLength(many.length);
    for (const g of short) expect(g.tokens.length).toBeLessThanOrEqual(5);
    expect(short[4]!.tokens).toEqual(short[0]!.tokens);
    const sampled = { maxNewTokens: 8, temperature: 1.5, topP: 0.9, seed: 7 };
    const a = await engine.generate({ modelPath, conversations: fx.prompts, options: sampled });
    const b = await engine.generate({ modelPath, conversations: fx.prompts, options: sampled });
    expect(a.map((g) => g.tokens)).toEqual(b.map((g) => g.tokens));
  });

  it('keeps models in an LRU: most recent last, unloaded above the memory budget', async () => {
    const f16 = join(fx.root, 'tiny-f16', 'model.gguf');
    const q8 = join(fx.root, 'tiny-q8_0', 'model.gguf');
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
      engine.generate({ modelPath: join(fx.root, 'tiny-f16', 'model.gguf'), loraPath: join(fx.root, 'nope.gguf'), conversations: fx.prompts }),
    ).rejects.toThrow(/ENOENT/);
  });
});
