// What a finished training job leaves behind and the records of publishing it: shared by the
// training job status (artifacts, latest_export) and the export service.
import { z } from 'zod';
import { Identifier, Timestamp, maybe } from './common.ts';

export const GgufQuantization = z
  .enum(['f16', 'bf16', 'q8_0', 'q4_k_m'])
  .describe('GGUF tensor type; q8_0 keeps quality, q4_k_m is the smallest');
export type GgufQuantization = z.infer<typeof GgufQuantization>;

export const ExportType = z
  .enum(['adapter', 'merged', 'gguf', 'onnx'])
  .describe('adapter: the LoRA adapter; merged: base with adapter merged in; gguf: a llama.cpp file; onnx: the merged model for ONNX Runtime and transformers.js (fp32, fp16, q4, q4f16)')
  .meta({ id: 'ExportType' });
export type ExportType = z.infer<typeof ExportType>;

export const ExportDestination = z
  .enum(['cloud', 'hub'])
  .describe('cloud: the blob store of this deployment; hub: a model-hub repository');
export type ExportDestination = z.infer<typeof ExportDestination>;

/** Empty counts as not given, since form-driven clients send every field. */
export const HubRepoId = z
  .string()
  .regex(/^([\w.-]+\/[\w.-]+)?$/, { message: 'hub_repo_id must look like owner/name' })
  .describe('Model-hub repository, owner/name');

const BlobUri = z.string().describe('Blob URI (file://… or s3://bucket/key) or hub repo URL');

export const ArtifactGroups = z
  .object({
    file: z
      .object({ adapter: maybe(BlobUri), merged: maybe(BlobUri), gguf: maybe(BlobUri), onnx: maybe(BlobUri) })
      .describe('Single downloadable files or archives (GET /exports/{job_id}/download)'),
    raw: z
      .object({ adapter: maybe(BlobUri), merged: maybe(BlobUri), onnx: maybe(BlobUri) })
      .describe('Folders of model files as training wrote them (onnx: the export’s folder, transformers.js’s layout)'),
    hub: z
      .object({ adapter: maybe(BlobUri), merged: maybe(BlobUri), gguf: maybe(BlobUri), onnx: maybe(BlobUri) })
      .describe('Model-hub repository URLs'),
  })
  .meta({ id: 'ArtifactGroups', description: 'Artifact locations by variant; absent or null when not produced' });
export type ArtifactGroups = z.infer<typeof ArtifactGroups>;

export const ExportArtifact = z.object({
  type: ExportType,
  path: BlobUri,
  variant: z.enum(['file', 'raw', 'hub']).describe('file: one downloadable file; raw: a folder; hub: a repo URL'),
});
export type ExportArtifact = z.infer<typeof ExportArtifact>;

export const OnnxVariant = z.enum(['fp32', 'fp16', 'q4', 'q4f16']).describe('fp32: onnx/model.onnx; fp16, q4 (4-bit MatMul weights), q4f16: onnx/model_<variant>.onnx');
export type OnnxVariant = z.infer<typeof OnnxVariant>;
/** The variants an ONNX export may add beside fp32, which it always writes (the others are checked against it). */
export const ONNX_EXTRA_VARIANTS = ['fp16', 'q4', 'q4f16'] as const satisfies readonly OnnxVariant[];
export type OnnxExtraVariant = (typeof ONNX_EXTRA_VARIANTS)[number];

export const OnnxVariantParity = z
  .object({
    variant: OnnxVariant,
    agreement: z.number().min(0).max(1).describe('Mean over the prompts of the share of greedy tokens before the first divergence from transformers'),
    first_divergence: maybe(z.object({ prompt: z.number().int().min(0), token: z.number().int().min(0) })).describe('Where the first prompt that diverged did so; null: every token equal'),
    prompts: z.number().int().min(1),
    tokens_per_prompt: z.number().int().min(1),
    execution_provider: z.string().describe('Where onnxruntime-node ran it: cpu'),
    usable: z.boolean().describe('false below 50% agreement: kept, but not to be used'),
  })
  .meta({ id: 'OnnxVariantParity', description: 'One ONNX variant run in onnxruntime-node against transformers, greedy, through the job’s chat template' });
export type OnnxVariantParity = z.infer<typeof OnnxVariantParity>;

export const ExportStatus = z.enum(['running', 'completed', 'failed']);
export type ExportStatus = z.infer<typeof ExportStatus>;

export const ExportRecord = z
  .object({
    export_id: Identifier,
    job_id: Identifier,
    type: ExportType,
    checkpoint_step: maybe(z.number().int().positive()).describe('The checkpoint exported; null: the final model'),
    status: ExportStatus.describe('running → completed | failed'),
    started_at: Timestamp,
    destination: z.array(ExportDestination),
    hub_repo_id: maybe(z.string()).describe('Hub repository, when hub was a destination'),
    message: maybe(z.string()).describe('What happened, in a sentence; while it runs, what its worker does now'),
    progress: maybe(
      z.object({
        stage: z.string().describe('What the worker does now: "making the GGUF (q8_0) of job_… for llama.cpp"'),
        elapsed_seconds: z.number().int().min(0).describe('For how long it has done it'),
      }),
    ).describe('While running: the stage and its time so far, updated every PROGRESS_INTERVAL_S (5 s); null between stages and once ended'),
    artifacts: z.array(ExportArtifact),
    parity: maybe(z.array(OnnxVariantParity)).describe('export_type onnx: each variant’s agreement with transformers, measured at export (fp32 must be exact, else the export failed)'),
    finished_at: maybe(Timestamp).describe('Set once the export completed or failed'),
    updated_at: Timestamp,
    // Last: scripts read a record's text in the order of the fields before it (the README's `grep -q '"type":"gguf",
    // "checkpoint_step":null,"status":"completed"'`); a field added in the middle would break them.
    checkpoint_name: maybe(z.string()).describe('A Tinker training run’s sampler weights exported (job_id the run’s id); null for a job’s models'),
  })
  .meta({ id: 'ExportRecord', description: 'One export of a job’s artifacts' });
export type ExportRecord = z.infer<typeof ExportRecord>;
