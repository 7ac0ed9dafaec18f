// bench/generate concurrency (#45): 1, 4 and 8 simultaneous streamed chats of 128 greedy tokens on one warm engine
// process (what /v1 chat and the console's playground run), for the README's default model (SmolLM2-135M-Instruct)
// and Gemma 3 270M, both q8_0. References measured in the same run: the same engine process with its sequence
// limit set to 1 (every chat waits for the one before), and one request carrying the same 8 conversations (one
// context's batched decode: the ceiling for 8 on this machine). Also: greedy agreement of the 8 concurrent chats with
// the same chats sent one at a time (llama.cpp's batched kernels are not batch-invariant).
// Run: pnpm exec tsx bench/generate/concurrency.ts   (the GGUFs are made once under bench/out/generate by the core)
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PlainMessage } from '@ftp/schema';
import type { Generation } from '../../services/worker/src/fast-engine/index.ts';
import { EngineProcess } from '../../services/worker/src/fast-engine/engine-process.ts';

const here = dirname(fileURLToPath(import.meta.url));
const coreDir = resolve(here, '../../core');
const out = resolve(here, '../out/generate');
const NEW_TOKENS = Number(process.env.BENCH_NEW_TOKENS ?? 128);
const SEQUENCES = 8;
const MODELS = (process.env.BENCH_MODELS ?? 'smollm2-135m,gemma3-270m').split(',');

const topics = ['the sea', 'a robot', 'autumn', 'a lost key', 'the moon', 'coffee', 'a small town', 'rain'];
const chats: PlainMessage[][] = topics.map((topic) => [{ role: 'user', content: `Write a long story about ${topic}.` }]);

/** The model's q8_0 GGUF, made once by the core's importer and GGUF writer. */
function gguf(source: string): string {
  const folder = join(out, `${source}-hf`);
  const file = join(out, `${source}-q8_0`, 'model.gguf');
  const core = (...args: string[]) => execFileSync('uv', ['run', '--frozen', 'python', '-m', 'ftcore', ...args], { cwd: coreDir, stdio: ['ignore', 'ignore', 'inherit'] });
  if (!existsSync(join(folder, 'config.json'))) core('import-model', '--source', source, '--output_dir', folder);
  if (!existsSync(file)) core('gguf', '--model', folder, '--output_file', file, '--quantization', 'q8_0');
  return file;
}

interface Round {
  tokensPerSecond: number;
  /** Mean time from sending to the first streamed text. */
  ttftSeconds: number;
  generations: Generation[];
}

/** `n` streamed chats sent at once, each its own request. */
async function concurrent(engine: EngineProcess, modelPath: string, n: number): Promise<Round> {
  const started = performance.now();
  const firsts: number[] = [];
  const generations = await Promise.all(chats.slice(0, n).map(async (chat) => {
    let first: number | undefined;
    const [generation] = await engine.generate({
      modelPath,
      conversations: [chat],
      options: { maxNewTokens: NEW_TOKENS },
      onText: () => { first ??= performance.now() - started; },
    });
    firsts.push((first ?? performance.now() - started) / 1000);
    return generation!;
  }));
  return rate(started, generations, firsts);
}

/** One request carrying the 8 conversations. */
async function batched(engine: EngineProcess, modelPath: string): Promise<Round> {
  const started = performance.now();
  let first: number | undefined;
  const generations = await engine.generate({
    modelPath,
    conversations: chats,
    options: { maxNewTokens: NEW_TOKENS },
    onText: () => { first ??= performance.now() - started; },
  });
  return rate(started, generations, [(first ?? 0) / 1000]);
}

function rate(started: number, generations: Generation[], firsts: number[]): Round {
  const seconds = (performance.now() - started) / 1000;
  const tokens = generations.reduce((sum, g) => sum + g.tokens.length, 0);
  return { tokensPerSecond: tokens / seconds, ttftSeconds: firsts.reduce((a, b) => a + b, 0) / firsts.length, generations };
}

/** Share of the tokens generated one at a time that the concurrent answers repeat before their first divergence. */
function agreement(together: Generation[], alone: Generation[]): { share: number; identical: number } {
  let same = 0;
  let total = 0;
  let identical = 0;
  together.forEach((g, i) => {
    const reference = alone[i]!.tokens;
    let k = 0;
    while (k < reference.length && g.tokens[k] === reference[k]) k++;
    same += k;
    total += reference.length;
    if (k === reference.length && g.tokens.length === reference.length) identical++;
  });
  return { share: same / total, identical };
}

const line = (label: string, r: Round) =>
  console.log(`  ${label.padEnd(44)} ${r.tokensPerSecond.toFixed(1).padStart(7)} tokens/s   time to first token ${r.ttftSeconds.toFixed(2)} s`);

const threads = process.env.BENCH_THREADS ? Number(process.env.BENCH_THREADS) : undefined;
const engineOptions = { maxParallel: SEQUENCES, ...(threads ? { threads } : {}) };
console.log(`bench/generate concurrency: streamed chats × ${NEW_TOKENS} greedy tokens, ${availableParallelism()} CPU cores${threads ? `, ${threads} threads` : ''}`);
for (const source of MODELS) {
  const modelPath = gguf(source);
  console.log(`${source} (q8_0)`);
  // The engine as the worker starts it (on a CPU: contexts of one sequence each); the same with all 8 sequences in
  // one context (what a GPU gets); and the sequence limit set to 1.
  const engines = {
    default: new EngineProcess(engineOptions),
    oneContext: new EngineProcess({ ...engineOptions, sequencesPerContext: SEQUENCES }),
    single: new EngineProcess({ ...engineOptions, maxParallel: 1 }),
  };
  try {
    // Load, and make every context a round of 8 will use (they stay warm, as in a worker that has served before).
    for (const engine of Object.values(engines)) await Promise.all(chats.map((chat) => engine.generate({ modelPath, conversations: [chat], options: { maxNewTokens: 4 } })));
    const alone: Generation[] = [];
    for (const chat of chats) alone.push(...(await engines.single.generate({ modelPath, conversations: [chat], options: { maxNewTokens: NEW_TOKENS } })));
    const results = new Map<string, Round>();
    for (const [name, engine, label] of [['default', engines.default, 'the engine as started'], ['oneContext', engines.oneContext, `one context of ${SEQUENCES} sequences`]] as const) {
      for (const n of [1, 4, SEQUENCES]) {
        const round = await concurrent(engine, modelPath, n);
        results.set(`${name}:${n}`, round);
        line(`${n} concurrent chat${n > 1 ? 's' : ''}, ${label}`, round);
      }
      const request = await batched(engine, modelPath);
      results.set(`${name}:batched`, request);
      line(`one request of ${SEQUENCES} conversations, ${label}`, request);
    }
    const one = await concurrent(engines.single, modelPath, SEQUENCES);
    line(`${SEQUENCES} concurrent chats, sequence limit 1`, one);
    const ceiling = results.get('oneContext:batched')!;
    for (const name of ['default', 'oneContext'] as const) {
      const eight = results.get(`${name}:${SEQUENCES}`)!;
      const agree = agreement(eight.generations, alone);
      console.log(`  ${name === 'default' ? 'as started' : 'one context'}: ${SEQUENCES} concurrent chats = ` +
        `${((100 * eight.tokensPerSecond) / ceiling.tokensPerSecond).toFixed(0)}% of one batched request on one context (target ≥ 90%), ` +
        `${(eight.tokensPerSecond / one.tokensPerSecond).toFixed(2)}× sequence limit 1; greedy agreement with one at a time: ` +
        `${agree.identical} of ${SEQUENCES} answers identical, ${(100 * agree.share).toFixed(1)}% of tokens before the first divergence (target ≥ 90%)`);
    }
  } finally {
    await Promise.all(Object.values(engines).map((e) => e.dispose()));
  }
}
