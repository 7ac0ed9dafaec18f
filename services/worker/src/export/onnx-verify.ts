// An ONNX export verified where it is meant to run (#43): each variant in the export's onnx/ is run greedily in
// onnxruntime-node (the version @huggingface/transformers pins, so what transformers.js runs in Node), as
// transformers.js decodes, the prompt and then one token a step over the KV cache the model returns, and its tokens
// are compared with transformers' for the same prompt ids (the reference the core wrote at export, rendered through
// the job's chat template). fp32 must give every token; the other variants report how far they agree.
// The check runs in a child process (measureOnnxParityApart, onnx-verify-main.ts): ONNX Runtime's native library is
// never loaded into the worker's process, which in the embedded default is the whole stack.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Ort from 'onnxruntime-node';
import type { OnnxVariantParity } from '@ftp/platform';
import { onnxModelFile } from '@ftp/jobs/models';
import { ending, forkTypeScript, why } from '@ftp/core-client/supervised-child';

const MAIN = fileURLToPath(new URL('./onnx-verify-main.ts', import.meta.url));

/** What the core's onnx step wrote beside the export: per prompt, its ids and transformers' greedy tokens. */
export interface OnnxReference {
  prompts: Array<{ prompt_ids: number[]; tokens: number[] }>;
}

/** What the ONNX export's reference is generated from: varied enough that a repeated token would not pass (the core
 *  keeps the first 4 whose 32-token continuations hold 8 or more different tokens). */
export const ONNX_CHECK_PROMPTS = [
  'Write a short poem about the sea.',
  'Explain in two sentences what a neural network is.',
  'List three fruits and their colours.',
  'Tell me a short story about a robot who learns to paint.',
  'How do I boil an egg?',
  'Name the planets of the solar system in order.',
  'What is the capital of France?',
  'Translate "good morning" into Spanish, French and German.',
].map((content) => ({ messages: [{ role: 'user', content }] }));

/** Below this a variant is kept but marked not to be used. */
export const USABLE_AGREEMENT = 0.5;
const EXECUTION_PROVIDER = 'cpu';

/** Greedy tokens of one ONNX causal LM with KV cache (Optimum's text-generation-with-past layout). */
export async function greedyTokens(session: Ort.InferenceSession, promptIds: readonly number[], count: number): Promise<number[]> {
  const ort = await import('onnxruntime-node');
  const inputs = new Map(session.inputMetadata.map((m) => [m.name, m]));
  // The cache starts empty: [batch, kv heads, 0, head dim], in the type the model takes (fp16 in fp16 models).
  let past: Record<string, Ort.Tensor> = {};
  for (const meta of session.inputMetadata) {
    if (!meta.name.startsWith('past_key_values.') || !meta.isTensor) continue;
    const [, heads, , dim] = meta.shape as Array<number | string>;
    if (typeof heads !== 'number' || typeof dim !== 'number') throw new Error(`${meta.name} has no fixed head count and size (${meta.shape.join(', ')})`);
    past[meta.name] = new ort.Tensor(meta.type as 'float32' | 'float16', meta.type === 'float16' ? new Uint16Array(0) : new Float32Array(0), [1, heads, 0, dim]);
  }
  const int64 = (values: readonly number[]) => new ort.Tensor('int64', BigInt64Array.from(values, (v) => BigInt(v)), [1, values.length]);
  let length = promptIds.length;
  let step: readonly number[] = promptIds;
  const tokens: number[] = [];
  for (let i = 0; i < count; i++) {
    const feeds: Record<string, Ort.Tensor> = { input_ids: int64(step), attention_mask: int64(new Array<number>(length).fill(1)), ...past };
    if (inputs.has('position_ids')) feeds.position_ids = int64(Array.from({ length: step.length }, (_, j) => length - step.length + j));
    const results = await session.run(feeds);
    const logits = results.logits!;
    const vocab = logits.dims[2]!;
    const last = (step.length - 1) * vocab;
    // fp16 models answer fp16 logits: their bits, read as numbers here
    const value = logits.type === 'float16' ? (v: number) => halfToNumber((logits.data as Uint16Array)[last + v]!) : (v: number) => (logits.data as Float32Array)[last + v]!;
    let best = 0;
    let bestValue = value(0);
    for (let v = 1; v < vocab; v++) {
      const x = value(v);
      if (x > bestValue) [best, bestValue] = [v, x];
    }
    tokens.push(best);
    past = {};
    for (const [name, value] of Object.entries(results)) if (name.startsWith('present.')) past[name.replace('present.', 'past_key_values.')] = value;
    step = [best];
    length += 1;
  }
  return tokens;
}

/** An IEEE 754 half-precision number from its 16 bits. */
export function halfToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 0x1f) return fraction ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}

/** The share of `expected` before `got` first differs from it (1: all equal), and that position. */
export function agreement(got: readonly number[], expected: readonly number[]): { share: number; divergence: number | null } {
  const at = expected.findIndex((token, i) => got[i] !== token);
  return at === -1 ? { share: 1, divergence: null } : { share: at / expected.length, divergence: at };
}

/** Every variant present in `folder`/onnx, run against the reference; fp32 first. */
export async function measureOnnxParity(folder: string, reference: OnnxReference): Promise<OnnxVariantParity[]> {
  const ort = await import('onnxruntime-node');
  const out: OnnxVariantParity[] = [];
  for (const variant of ['fp32', 'fp16', 'q4', 'q4f16'] as const) {
    const file = path.join(folder, 'onnx', onnxModelFile(variant));
    if (!(await fs.stat(file).catch(() => undefined))) continue;
    const session = await ort.InferenceSession.create(file, { executionProviders: [EXECUTION_PROVIDER] });
    try {
      let sum = 0;
      let first: OnnxVariantParity['first_divergence'] = null;
      for (const [index, prompt] of reference.prompts.entries()) {
        const { share, divergence } = agreement(await greedyTokens(session, prompt.prompt_ids, prompt.tokens.length), prompt.tokens);
        sum += share;
        if (divergence !== null && first === null) first = { prompt: index, token: divergence };
      }
      const mean = sum / reference.prompts.length;
      out.push({
        variant, agreement: Math.round(mean * 1000) / 1000, first_divergence: first, prompts: reference.prompts.length,
        tokens_per_prompt: reference.prompts[0]?.tokens.length ?? 0, execution_provider: EXECUTION_PROVIDER, usable: mean >= USABLE_AGREEMENT,
      });
    } finally {
      await session.release();
    }
  }
  return out;
}

/** measureOnnxParity in a child process of its own; a crash there fails the check with the way it ended. */
export async function measureOnnxParityApart(folder: string, referenceFile: string): Promise<OnnxVariantParity[]> {
  const check = forkTypeScript<never, { parity: OnnxVariantParity[] } | { error: string }>(MAIN, [folder, referenceFile]);
  let answer: { parity: OnnxVariantParity[] } | { error: string } | undefined;
  check.onMessage((message) => {
    answer = message;
  });
  const end = await check.ended;
  if (end.startError) throw end.startError;
  if (answer && 'parity' in answer && end.code === 0) return answer.parity;
  if (answer && 'error' in answer) throw new Error(`the ONNX check failed: ${answer.error}`);
  throw new Error(`the ONNX check's process ${ending(end)}${why(check.stderr)}`);
}
