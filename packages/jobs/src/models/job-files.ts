// Where a training job's files live in the blob store and what they are called: training writes them, the
// export worker and the inference worker read them, the API presents and deletes them. Named once here.
import type { TrainingJobRow } from '@ftp/platform';
import { ONNX_EXTRA_VARIANTS, type GgufQuantization, type OnnxVariant } from '@ftp/schema';

export interface JobPrefixes {
  adapter: string;
  merged: string;
  gguf: string;
  checkpoints: string;
  exports: string;
}

/** Blob prefixes (each ending in '/') under the job's own prefix; deleting the job deletes them all. */
export function jobPrefixes(job: Pick<TrainingJobRow, 'blob_prefix'>): JobPrefixes {
  const p = job.blob_prefix;
  return { adapter: `${p}adapter/`, merged: `${p}merged/`, gguf: `${p}gguf/`, checkpoints: `${p}checkpoints/`, exports: `${p}exports/` };
}

/** The name a GGUF of the whole model has wherever it is stored: training's `gguf/`, exports, caches. */
export const ggufFileName = (quantization: GgufQuantization): string => `model-${quantization}.gguf`;

/** An ONNX variant's file in the export folder's onnx/ (transformers.js's names: its `dtype` option picks them). */
export const onnxModelFile = (variant: OnnxVariant): string => (variant === 'fp32' ? 'model.onnx' : `model_${variant}.onnx`);

/** The folder an ONNX export of these variants beside fp32 goes to (a worker's cache, the exports' raw folder): `onnx`
 *  for all three, `onnx-q4`, `onnx-fp32` (none) … so an export of fewer files never shows another's. */
export function onnxFolderName(variants: readonly OnnxVariant[]): string {
  const extra = ONNX_EXTRA_VARIANTS.filter((v) => variants.includes(v));
  return extra.length === ONNX_EXTRA_VARIANTS.length ? 'onnx' : `onnx-${extra.length ? extra.join('-') : 'fp32'}`;
}

/** True for LoRA/QLoRA jobs (an adapter over the base); false for Full jobs (a whole model). */
export function hasAdapter(job: Pick<TrainingJobRow, 'artifacts'>): boolean {
  return Boolean(job.artifacts.raw.adapter);
}
