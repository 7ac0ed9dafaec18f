// The exports page's ONNX downloads: each model file of the folder, marked as its export measured it (#54).
import { describe, expect, it } from 'vitest';
import { onnxChoices } from '../web/src/pages/exports/onnx-variants.ts';

const measured = (variant: 'fp32' | 'fp16' | 'q4' | 'q4f16', agreement: number) => ({
  variant, agreement, first_divergence: null, prompts: 4, tokens_per_prompt: 16, execution_provider: 'cpu', usable: agreement >= 0.5,
});
const folder = { file: { onnx: 'blob://a.tar.gz' }, raw: { onnx: 'blob://onnx' }, hub: {} };

describe('onnxChoices', () => {
  it('offers the variants the export measured, an unusable one said to be so', () => {
    const choices = onnxChoices({ artifacts: folder, onnx_variants: [measured('fp32', 1), measured('fp16', 1), measured('q4', 0.41)] });
    expect(choices.map((c) => c.label)).toEqual(['onnx fp32', 'onnx fp16', 'onnx q4 (not usable)']);
    expect(choices[2]).toMatchObject({ usable: false, hint: "41% of greedy tokens equal to transformers': kept, but not to be used" });
  });

  it('offers nothing without an ONNX folder, and every variant unmarked for one exported before the check', () => {
    expect(onnxChoices({ artifacts: { file: {}, raw: {}, hub: {} }, onnx_variants: null })).toEqual([]);
    expect(onnxChoices({ artifacts: folder, onnx_variants: null }).map((c) => [c.label, c.usable])).toEqual([['onnx fp32', null], ['onnx fp16', null], ['onnx q4', null], ['onnx q4f16', null]]);
  });
});
