// Export service schemas: publishing a completed job's artifacts (interface.md 2.15, 2.16, 4.3;
// decisions.md "Export").
import { z } from 'zod';
import { ArtifactGroups, ExportDestination, ExportRecord, ExportType, GgufQuantization, HubRepoId, ONNX_EXTRA_VARIANTS, OnnxVariant, OnnxVariantParity } from './artifacts.ts';
import { CheckpointName, CheckpointStep, documentedRules, MAX_INT32, Identifier, Modality, Secret, maybe } from './common.ts';
import { exportRequest } from './examples.ts';

export const ExportRequest = z
  .strictObject({
    job_id: Identifier.describe('A completed training job (any job, with checkpoint_step), or a Tinker training run with checkpoint_name'),
    export_type: ExportType.default('adapter'),
    checkpoint_step: CheckpointStep.optional(),
    checkpoint_name: CheckpointName.optional(),
    destination: z.array(ExportDestination).min(1).default(['cloud']),
    hub_repo_id: HubRepoId.optional().describe('Required when destination includes hub'),
    hub_token: Secret.optional().describe('Model-hub credential, required when destination includes hub; never stored'),
    gguf_quantization: GgufQuantization.default('q8_0').describe('export_type gguf only'),
    onnx_variants: z
      .array(z.enum(ONNX_EXTRA_VARIANTS))
      .max(ONNX_EXTRA_VARIANTS.length)
      .optional()
      .describe('export_type onnx only: the variants written beside fp32 (onnx/model.onnx, always written: the others are checked against it); default all three, [] for fp32 alone. Each costs export time: fp16 traces the model again'),
  })
  .superRefine((request, ctx) => {
    if (request.onnx_variants !== undefined && request.export_type !== 'onnx') {
      ctx.addIssue({ code: 'custom', path: ['onnx_variants'], message: `onnx_variants chooses the files of an ONNX export; leave it out for export_type ${request.export_type}, or set export_type onnx` });
    }
    if (request.checkpoint_step !== undefined && request.checkpoint_name !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['checkpoint_name'], message: 'checkpoint_step names a job’s checkpoint and checkpoint_name a Tinker run’s sampler weights; send one of them' });
    }
    if (!request.destination.includes('hub')) return;
    for (const key of ['hub_repo_id', 'hub_token'] as const) {
      if (!request[key]) {
        ctx.addIssue({ code: 'custom', path: [key], message: `${key} is required when destination includes hub`, params: { type: 'missing' } });
      }
    }
  })
  .meta({
    id: 'ExportRequest',
    description: 'Publish a job’s artifacts',
    examples: [exportRequest],
    ...documentedRules({ when: { required: ['checkpoint_step'] }, then: { not: { required: ['checkpoint_name'] } } }, { when: { required: ['onnx_variants'] }, then: { required: ['export_type'], properties: { export_type: { const: 'onnx' } } } }, { when: { required: ['destination'], properties: { destination: { contains: { const: 'hub' } } } }, then: { required: ['hub_repo_id', 'hub_token'], properties: { hub_repo_id: { minLength: 1 }, hub_token: { minLength: 1 } } } }),
  });
export type ExportRequest = z.infer<typeof ExportRequest>;

export const ExportCreateResult = z
  .object({
    success: z.boolean(),
    message: z.string(),
    export_id: Identifier.describe('Follow it in latest_export of GET /exports/{job_id}'),
  })
  .meta({ id: 'ExportCreateResult' });
export type ExportCreateResult = z.infer<typeof ExportCreateResult>;

const exportSummaryFields = {
  job_id: Identifier,
  job_name: z.string(),
  user_id: z.string().describe('Owner'),
  adapter_path: maybe(z.string()),
  base_model_id: z.string(),
  modality: Modality,
  artifacts: ArtifactGroups,
  onnx_variants: maybe(z.array(OnnxVariantParity)).describe('The model files of the ONNX folder in artifacts (raw.onnx), each as its export measured it against transformers; one whose `usable` is false is kept but should not be used. Null: no ONNX folder'),
};

export const ExportSummary = z
  .object(exportSummaryFields)
  .meta({ id: 'ExportSummary', description: 'A job with artifacts, without its export record' });
export type ExportSummary = z.infer<typeof ExportSummary>;

export const ExportDetails = z
  .object({ ...exportSummaryFields, latest_export: maybe(ExportRecord) })
  .meta({ id: 'ExportDetails' });
export type ExportDetails = z.infer<typeof ExportDetails>;

export const ExportList = z
  .array(ExportSummary)
  .describe('The caller’s jobs that have any artifact')
  .meta({ id: 'ExportList' });
export type ExportList = z.infer<typeof ExportList>;

export const ExportParams = z.object({ job_id: Identifier.describe('Training job id') });

export const DownloadQuery = z.object({
  type: z.enum(ExportType.options).describe('Which file artifact to stream'),
  checkpoint_step: z.coerce.number().int().min(1).max(MAX_INT32).optional().describe('The file of an export of this checkpoint'),
  checkpoint_name: CheckpointName.optional().describe('The file of an export of these sampler weights of a Tinker run (job_id the run’s id)'),
  variant: OnnxVariant.optional().describe('type onnx only: one model file (onnx/model_<variant>.onnx) instead of the whole folder as onnx.tar.gz'),
}).superRefine((query, ctx) => {
  if (query.variant !== undefined && query.type !== 'onnx') {
    ctx.addIssue({ code: 'custom', path: ['variant'], message: 'variant picks one model file of an onnx export; leave it out for other types' });
  }
});
export type DownloadQuery = z.infer<typeof DownloadQuery>;
