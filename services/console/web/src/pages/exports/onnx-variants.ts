// The ONNX model files the exports page offers for download, each marked as its export measured it: a variant whose
// greedy tokens mostly differ from transformers' is kept but not to be used (#54: q4 at 41% was offered like fp32).
import type { ExportSummary } from '../../api/types.ts';

/** Every variant an ONNX export may hold, for a folder exported before the agreement was recorded. */
const ONNX_VARIANTS = ['fp32', 'fp16', 'q4', 'q4f16'] as const;

export interface OnnxChoice {
  variant: string;
  /** null: not measured (an export older than the check). */
  usable: boolean | null;
  label: string;
  /** The measured agreement, in words. */
  hint?: string;
}

export function onnxChoices(entry: Pick<ExportSummary, 'artifacts' | 'onnx_variants'>): OnnxChoice[] {
  if (!entry.artifacts.raw.onnx) return [];
  if (!entry.onnx_variants) return ONNX_VARIANTS.map((variant) => ({ variant, usable: null, label: `onnx ${variant}` }));
  return entry.onnx_variants.map((p) => ({
    variant: p.variant,
    usable: p.usable,
    label: `onnx ${p.variant}${p.usable ? '' : ' (not usable)'}`,
    hint: `${Math.round(p.agreement * 100)}% of greedy tokens equal to transformers'${p.usable ? '' : ': kept, but not to be used'}`,
  }));
}
