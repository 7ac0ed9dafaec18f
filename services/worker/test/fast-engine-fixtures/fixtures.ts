// Builds the tiny-model fixtures once per test file with the core (see build_tiny.py), in a temp folder.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChatMessage } from '../../src/fast-engine/index.ts';

const here = dirname(fileURLToPath(import.meta.url));
export const coreDir = resolve(here, '../../../../core');

export interface HfGeneration {
  index: number;
  text: string;
  token_ids: number[];
}

export interface TinyFixtures {
  root: string;
  prompts: ChatMessage[][];
  hf: { base: HfGeneration[]; merged: HfGeneration[] };
}

function readJsonl<T>(path: string): T[] {
  return readFileSync(path, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as T);
}

export function buildTinyFixtures(): TinyFixtures {
  const root = mkdtempSync(join(tmpdir(), 'fast-engine-'));
  execFileSync('uv', ['run', '--frozen', 'python', join(here, 'build_tiny.py'), root], {
    cwd: coreDir,
    env: { ...process.env, OMP_NUM_THREADS: '1', TOKENIZERS_PARALLELISM: 'false' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const prompts = readJsonl<{ messages: ChatMessage[] }>(join(root, 'prompts.jsonl')).map((r) => r.messages);
  return {
    root,
    prompts,
    hf: {
      base: readJsonl<HfGeneration>(join(root, 'hf-base.jsonl')),
      merged: readJsonl<HfGeneration>(join(root, 'hf-merged.jsonl')),
    },
  };
}

/** Share of positions (over the longer sequence) where both sequences have the same token. */
export function agreement(a: readonly number[], b: readonly number[]): number {
  const length = Math.max(a.length, b.length);
  if (length === 0) return 1;
  let same = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] === b[i]) same++;
  return same / length;
}
