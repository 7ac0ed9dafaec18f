// Builds the tiny-model fixtures once per test file with the core (see build_tiny.py), in a temp folder.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PlainMessage } from '@ftp/schema';

const here = dirname(fileURLToPath(import.meta.url));
export const coreDir = resolve(here, '../../../../core');

export interface HfGeneration {
  index: number;
  text: string;
  token_ids: number[];
}

/** The architectures make-tiny-model builds, all of which the core's gguf command exports. */
export const TINY_ARCHITECTURES = ['llama', 'qwen2', 'qwen3', 'gemma3'] as const;
export type TinyArchitecture = (typeof TINY_ARCHITECTURES)[number];

export interface ArchitectureFixtures {
  /** Holds tiny-f16/model.gguf, tiny-q8_0/model.gguf and lora/adapter.gguf. */
  dir: string;
  hf: { base: HfGeneration[]; merged: HfGeneration[] };
}

export interface TinyFixtures {
  root: string;
  prompts: PlainMessage[][];
  architectures: Record<TinyArchitecture, ArchitectureFixtures>;
  /** A wider tiny Llama (K-quant blocks are 256 wide): tiny-f16/model.gguf and tiny-q4_k_m/model.gguf. */
  kQuantDir: string;
  /** A random-init tiny Llama as f16 GGUF (tiny-f16/model.gguf), never taught anything. */
  untaughtDir: string;
}

function readJsonl<T>(path: string): T[] {
  return readFileSync(path, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as T);
}

export function buildTinyFixtures(): TinyFixtures {
  const root = mkdtempSync(join(tmpdir(), 'fast-engine-'));
  execFileSync('uv', ['run', '--frozen', 'python', join(here, 'build_tiny.py'), root, ...TINY_ARCHITECTURES], {
    cwd: coreDir,
    env: { ...process.env, OMP_NUM_THREADS: '1', TOKENIZERS_PARALLELISM: 'false' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const prompts = readJsonl<{ messages: PlainMessage[] }>(join(root, 'prompts.jsonl')).map((r) => r.messages);
  const architecture = (name: TinyArchitecture): ArchitectureFixtures => {
    const dir = join(root, name);
    const hf = { base: readJsonl<HfGeneration>(join(dir, 'hf-base.jsonl')), merged: readJsonl<HfGeneration>(join(dir, 'hf-merged.jsonl')) };
    return { dir, hf };
  };
  const architectures = Object.fromEntries(TINY_ARCHITECTURES.map((name) => [name, architecture(name)]));
  return { root, prompts, architectures: architectures as TinyFixtures['architectures'], kQuantDir: join(root, 'k-quant'), untaughtDir: join(root, 'untaught') };
}

/** Share of positions (over the longer sequence) where both sequences have the same token. */
export function agreement(a: readonly number[], b: readonly number[]): number {
  const length = Math.max(a.length, b.length);
  if (length === 0) return 1;
  let same = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] === b[i]) same++;
  return same / length;
}
