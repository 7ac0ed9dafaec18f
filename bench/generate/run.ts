// bench/generate: Gemma 3 270M, 64 prompts × 128 new tokens, greedy. The fast engine (llama.cpp, q8_0 GGUF) vs
// transformers generate (fp32) in the same run, and single-sequence decode speed against this machine's
// memory-bandwidth limit (measured here: bandwidth ÷ bytes of weights read per token).
// Run: pnpm exec tsx bench/generate/run.ts   (needs the core's gemma extra: cd core && uv sync --frozen --extra gemma)
import { execFileSync } from 'node:child_process';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PlainMessage } from '@ftp/schema';
import { FastEngine } from '../../services/worker/src/fast-engine/index.ts';

const here = dirname(fileURLToPath(import.meta.url));
const coreDir = resolve(here, '../../core');
const out = resolve(here, '../out/generate');
const PROMPTS = Number(process.env.BENCH_PROMPTS ?? 64);
const NEW_TOKENS = Number(process.env.BENCH_NEW_TOKENS ?? 128);

const topics = ['the sea', 'a robot', 'autumn', 'a lost key', 'the moon', 'coffee', 'a small town', 'rain'];
const asks = ['Write a short story about', 'Explain to a child', 'List facts about', 'Write a poem about',
  'Describe', 'Give advice about', 'Tell a joke about', 'Write a dialogue about'];
const prompts: PlainMessage[][] = Array.from({ length: PROMPTS }, (_, i) => [
  { role: 'user', content: `${asks[i % asks.length]} ${topics[Math.floor(i / asks.length) % topics.length]}.` },
]);

/** Sustained copy bandwidth (bytes read + written per second) over a buffer much larger than the caches. */
function memoryBandwidth(): number {
  const size = 512 * 2 ** 20;
  const a = Buffer.alloc(size, 1);
  const b = Buffer.alloc(size);
  a.copy(b); // fault the pages in
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const t = process.hrtime.bigint();
    a.copy(b);
    best = Math.min(best, Number(process.hrtime.bigint() - t) / 1e9);
  }
  return (2 * size) / best;
}

mkdirSync(out, { recursive: true });
const promptsFile = join(out, 'prompts.jsonl');
writeFileSync(promptsFile, prompts.map((messages) => JSON.stringify({ messages })).join('\n') + '\n');

console.log(`bench/generate: ${PROMPTS} prompts × ${NEW_TOKENS} new tokens, ${cpus().length} CPU cores`);
// The result is the line with the timing: on a first run the model's import and GGUF export print their core events
// to the same stdout, and those may come last.
const hfLines = execFileSync('uv', ['run', '--frozen', 'python', join(here, 'transformers_side.py'), out, promptsFile, String(NEW_TOKENS), '8'], {
  cwd: coreDir,
  stdio: ['ignore', 'pipe', 'inherit'],
  encoding: 'utf8',
}).trim().split('\n');
const hf = hfLines.map((line) => { try { return JSON.parse(line) as Record<string, unknown>; } catch { return undefined; } }).findLast((r) => typeof r?.seconds === 'number') as
  | { seconds: number; tokens: number; gguf: string }
  | undefined;
if (!hf) throw new Error(`transformers_side.py printed no result; its output:\n${hfLines.slice(-20).join('\n')}`);

const hfRate = hf.tokens / hf.seconds;
console.log(`transformers fp32 (batch 8):   ${hf.tokens} tokens in ${hf.seconds.toFixed(1)} s = ${hfRate.toFixed(1)} tokens/s`);

// BENCH_THREADS=1 on a machine shared with other work: llama.cpp's spinning thread barrier loses badly to contention.
const threads = process.env.BENCH_THREADS ? Number(process.env.BENCH_THREADS) : undefined;
const engine = await FastEngine.create({ maxParallel: PROMPTS, ...(threads ? { threads } : {}) });
await engine.generate({ modelPath: hf.gguf, conversations: prompts.slice(0, 1), options: { maxNewTokens: 4 } }); // load + warm-up
let started = performance.now();
const batch = await engine.generate({ modelPath: hf.gguf, conversations: prompts, options: { maxNewTokens: NEW_TOKENS } });
const fastSeconds = (performance.now() - started) / 1000;
const fastTokens = batch.reduce((n, g) => n + g.tokens.length, 0);

// Single-sequence decode: every new token reads all weights once (the tied embedding as the output layer).
const single = { prompt: prompts.slice(0, 1), tokens: 0, seconds: 0 };
started = performance.now();
const [one] = await engine.generate({ modelPath: hf.gguf, conversations: single.prompt, options: { maxNewTokens: NEW_TOKENS } });
single.seconds = (performance.now() - started) / 1000;
single.tokens = one!.tokens.length;
await engine.dispose();

const bandwidth = memoryBandwidth();
const weightBytes = statSync(hf.gguf).size;
const limit = bandwidth / weightBytes;
const fastRate = fastTokens / fastSeconds;
const decodeRate = single.tokens / single.seconds;
console.log(`fast engine q8_0 (${PROMPTS} parallel): ${fastTokens} tokens in ${fastSeconds.toFixed(1)} s = ${fastRate.toFixed(1)} tokens/s`);
console.log(`ratio fast/transformers: ${(fastRate / hfRate).toFixed(2)}× (target ≥ 5×)`);
console.log(`memory bandwidth (copy): ${(bandwidth / 1e9).toFixed(1)} GB/s; q8_0 weights ${(weightBytes / 1e6).toFixed(0)} MB → limit ${limit.toFixed(1)} tokens/s per sequence`);
console.log(`single-sequence decode: ${single.tokens} tokens in ${single.seconds.toFixed(2)} s = ${decodeRate.toFixed(1)} tokens/s = ${((100 * decodeRate) / limit).toFixed(0)}% of the limit (target ≥ 60%; includes prompt processing)`);
