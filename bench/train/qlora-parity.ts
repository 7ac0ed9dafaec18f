// The CPU half of the QLoRA check (gpu_qlora.py made the tarball on a GPU): the merged model that a QLoRA adapter
// was folded into, exported as f16 GGUF by the core, must generate in llama.cpp (the fast engine) exactly the greedy
// tokens transformers generates from the merged folder on this machine, as the fast engine's tests require of every
// export; and transformers here must agree with what the GPU machine generated from it.
//
//   pnpm exec tsx bench/train/qlora-parity.ts qlora.tar.gz
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { PlainMessage } from '@ftp/schema';
import { FastEngine } from '../../services/worker/src/fast-engine/index.ts';
import { agreement, coreDir } from '../../services/worker/test/fast-engine-fixtures/fixtures.ts';

const MAX_NEW_TOKENS = 40; // as gpu_qlora.py

interface HfGeneration { text: string; token_ids: number[] }
const readJsonl = <T>(path: string): T[] => readFileSync(path, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as T);
const ftcore = (...args: string[]) =>
  execFileSync('uv', ['run', '--frozen', 'python', '-m', 'ftcore', ...args], { cwd: coreDir, stdio: ['ignore', 'ignore', 'inherit'] });

const tarball = process.argv[2];
if (!tarball) throw new Error('usage: tsx bench/train/qlora-parity.ts QLORA.tar.gz');
const dir = mkdtempSync(join(tmpdir(), 'qlora-parity-'));
try {
  execFileSync('tar', ['-xzf', resolve(tarball), '-C', dir]);
  const prompts = join(dir, 'prompts.jsonl');
  ftcore('generate', '--model', join(dir, 'merged'), '--input_file', prompts, '--output_file', join(dir, 'hf-cpu.jsonl'),
    '--max_new_tokens', String(MAX_NEW_TOKENS), '--device', 'cpu');
  ftcore('gguf', '--model', join(dir, 'merged'), '--output_file', join(dir, 'f16', 'model.gguf'), '--quantization', 'f16');
  const hf = readJsonl<HfGeneration>(join(dir, 'hf-cpu.jsonl'));
  const gpu = readJsonl<HfGeneration>(join(dir, 'hf-merged.jsonl'));
  const conversations = readJsonl<{ messages: PlainMessage[] }>(prompts).map((r) => r.messages);
  const engine = await FastEngine.create({ gpu: false, threads: 2 });
  const out = await engine.generate({ modelPath: join(dir, 'f16', 'model.gguf'), conversations, options: { maxNewTokens: MAX_NEW_TOKENS } });
  await engine.dispose();
  let exact = true;
  for (const [i, expected] of hf.entries()) {
    const llama = out[i]!.tokens;
    const same = JSON.stringify(llama) === JSON.stringify(expected.token_ids);
    exact &&= same && expected.token_ids.length >= 32;
    console.log(`prompt ${i}: ${expected.token_ids.length} tokens, llama.cpp f16 ${same ? '=' : '≠'} transformers (CPU), `
      + `CPU vs GPU transformers agree on ${(agreement(expected.token_ids, gpu[i]!.token_ids) * 100).toFixed(0)}%: ${JSON.stringify(expected.text.slice(0, 60))}`);
  }
  console.log(exact ? 'PASS: the f16 GGUF of the QLoRA-merged model gives transformers\' greedy tokens exactly' : 'FAIL');
  process.exitCode = exact ? 0 : 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
