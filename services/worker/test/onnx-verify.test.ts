// The worker's half of the ONNX export check (#43) on every architecture it exports: a tiny model of each is exported
// by the core's onnx step and run greedily in onnxruntime-node, as transformers.js runs it; the fp32 model gives
// transformers' tokens exactly (past Gemma 3's sliding window), fp16 (fp16 cache and logits) runs, and a model whose
// weights were changed is caught at the first token that differs. The check runs in a child process: ONNX Runtime is
// never mapped into the worker's (here: this test's) process, and a model it cannot load fails the check, not the worker.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CORE_PYTHON } from '@ftp/core-client';
import { agreement, halfToNumber, measureOnnxParityApart, ONNX_CHECK_PROMPTS, type OnnxReference } from '../src/export/onnx-verify.ts';

const mapsOnnxRuntime = async () => (await fs.readFile('/proc/self/maps', 'utf8')).includes('onnxruntime');

const CORE = fileURLToPath(new URL('../../../core/', import.meta.url));
let scratch: string;

async function core(command: string, spec: Record<string, unknown>): Promise<void> {
  const file = path.join(scratch, `${command}-${Date.now()}.json`);
  await fs.writeFile(file, JSON.stringify(spec));
  await promisify(execFile)(process.env.CORE_PYTHON ?? DEFAULT_CORE_PYTHON, ['-m', 'ftcore', command, '--spec', file], { cwd: CORE, timeout: 300_000 });
}

beforeAll(async () => {
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-onnx-verify-'));
  await fs.writeFile(path.join(scratch, 'prompts.json'), JSON.stringify(ONNX_CHECK_PROMPTS));
});
afterAll(async () => {
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

it('reads half-precision numbers and measures agreement as the share before the first difference', () => {
  expect([0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00].map(halfToNumber)).toEqual([1, -2, 65504, 2 ** -24, Infinity]);
  expect(agreement([1, 2, 3, 4], [1, 2, 3, 4])).toEqual({ share: 1, divergence: null });
  expect(agreement([1, 2, 9, 4], [1, 2, 3, 4])).toEqual({ share: 0.5, divergence: 2 });
});

describe.each(['llama', 'qwen2', 'qwen3', 'gemma3'])('%s', (architecture) => {
  it('fp32 in onnxruntime-node gives transformers’ greedy tokens; the other variants run and say how far they agree', async () => {
    const dir = path.join(scratch, architecture);
    await core('make-tiny-model', { output_dir: path.join(dir, 'model'), architecture });
    await core('onnx', { model: path.join(dir, 'model'), output_dir: path.join(dir, 'export'), prompts_file: path.join(scratch, 'prompts.json'), reference_file: path.join(dir, 'reference.json') });
    const reference = JSON.parse(await fs.readFile(path.join(dir, 'reference.json'), 'utf8')) as OnnxReference;
    expect(reference.prompts).toHaveLength(4);
    const parity = await measureOnnxParityApart(path.join(dir, 'export'), path.join(dir, 'reference.json'));
    expect(await mapsOnnxRuntime()).toBe(false);
    expect(parity.map((p) => p.variant)).toEqual(architecture === 'gemma3' ? ['fp32', 'q4'] : ['fp32', 'fp16', 'q4', 'q4f16']);
    expect(parity[0]).toEqual({ variant: 'fp32', agreement: 1, first_divergence: null, prompts: 4, tokens_per_prompt: 32, execution_provider: 'cpu', usable: true });
    for (const p of parity) expect(p.usable).toBe(p.agreement >= 0.5);
  }, 300_000);
});

it('a model ONNX Runtime cannot load fails the check with its reason, and this process carries on', async () => {
  const dir = path.join(scratch, 'llama');
  const broken = path.join(scratch, 'broken');
  await fs.cp(path.join(dir, 'export'), broken, { recursive: true });
  const file = path.join(broken, 'onnx', 'model.onnx');
  await fs.truncate(file, Math.floor((await fs.stat(file)).size / 3));
  await expect(measureOnnxParityApart(broken, path.join(dir, 'reference.json'))).rejects.toThrow(/^the ONNX check failed: .*model\.onnx.*protobuf parsing failed/is);
  expect(await mapsOnnxRuntime()).toBe(false);
}, 120_000);
