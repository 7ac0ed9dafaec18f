// What a finished training job leaves behind and the records of publishing it: shared by the
// training job status (artifacts, latest_export) and the export service.
import { z } from 'zod';
import { Identifier, Timestamp, maybe } from './common.ts';

export const GgufQuantization = z
  .enum(['f16', 'bf16', 'q8_0', 'q4_k_m'])
  .describe('GGUF tensor type; q8_0 keeps quality, q4_k_m is the smallest');
export type GgufQuantization = z.infer<typeof GgufQuantization>;

export const ExportType = z
  .enum(['adapter', 'merged', 'gguf'])
  .describe('adapter: the LoRA adapter; merged: base with adapter merged in; gguf: a llama.cpp file')
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
      .object({ adapter: maybe(BlobUri), merged: maybe(BlobUri), gguf: maybe(BlobUri) })
      .describe('Single downloadable files or archives (GET /exports/{job_id}/download)'),
    raw: z
      .object({ adapter: maybe(BlobUri), merged: maybe(BlobUri) })
      .describe('Folders of model files as training wrote them'),
    hub: z
      .object({ adapter: maybe(BlobUri), merged: maybe(BlobUri), gguf: maybe(BlobUri) })
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
    finished_at: maybe(Timestamp).describe('Set once the export completed or failed'),
    updated_at: Timestamp,
  })
  .meta({ id: 'ExportRecord', description: 'One export of a job’s artifacts' });
export type ExportRecord = z.infer<typeof ExportRecord>;
