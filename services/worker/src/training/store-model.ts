// What a finished training run leaves in blob storage: the adapter (LoRA/QLoRA) or the whole model (Full), the
// merged model when export_config.format is merged, and the GGUF of the whole model with its Ollama Modelfile
// when include_gguf is set. Merge and GGUF conversion are core steps run here, on the worker.
import path from 'node:path';
import type { ArtifactGroupsRow, TrainingJobRow } from '@ftp/platform';
import { ggufFileName, jobPrefixes } from '@ftp/jobs/models';
import { jobConfig } from '@ftp/schema';
import { ModelBuildError, runCoreStep } from '../models/base-models.ts';
import { uploadFolder } from '../models/blob-folders.ts';
import { jobWorkDir } from '../models/job-models.ts';
import { JobFailure } from './prepare.ts';
import { stopReason, type JobContext } from './job-context.ts';

export interface StoredModel {
  artifacts: ArtifactGroupsRow;
  adapterPath: string | null;
  ggufPath: string | null;
  /** Whether the job trained an adapter (LoRA/QLoRA) rather than the whole model. */
  adapter: boolean;
}

export async function storeTrainedModel(ctx: JobContext, job: TrainingJobRow, baseModel: string, produced: ReadonlyMap<string, string>): Promise<StoredModel> {
  const { platform } = ctx;
  const config = jobConfig(job);
  const work = jobWorkDir(platform, job.job_id);
  const prefixes = jobPrefixes(job);
  const step = async (command: 'merge' | 'gguf', spec: Record<string, unknown>) =>
    runCoreStep(platform, command, spec, path.join(work, `${command}.json`), { ...(ctx.secrets ? { secrets: ctx.secrets } : {}), signal: ctx.signal }).catch((err: unknown) => {
      if (err instanceof ModelBuildError) throw new JobFailure(err.cancelled ? stopReason(ctx.signal, ctx.workerId) : err.message);
      throw err;
    });

  const artifacts: ArtifactGroupsRow = { file: {}, raw: {}, hub: {} };
  const adapterDir = produced.get('adapter');
  const modelDir = produced.get('model') ?? produced.get('merged');
  const { format, include_gguf: includeGguf, gguf_quantization: quantization } = config.export_config;
  let fullModelDir = modelDir;
  if (adapterDir) {
    artifacts.raw.adapter = await uploadFolder(platform, adapterDir, prefixes.adapter.slice(0, -1));
    if (format === 'merged' || includeGguf) {
      fullModelDir = path.join(work, 'merged');
      await step('merge', { base_model: baseModel, adapter: adapterDir, output_dir: fullModelDir });
    }
    if (format === 'merged') artifacts.raw.merged = await uploadFolder(platform, fullModelDir!, prefixes.merged.slice(0, -1));
  } else if (modelDir) {
    artifacts.raw.merged = await uploadFolder(platform, modelDir, prefixes.merged.slice(0, -1));
  } else {
    throw new JobFailure('the ML core finished without reporting an adapter or a model');
  }

  let ggufPath: string | null = null;
  if (includeGguf) {
    const ggufDir = path.join(work, 'gguf');
    await step('gguf', { model: fullModelDir, output_file: path.join(ggufDir, ggufFileName(quantization)), quantization });
    await uploadFolder(platform, ggufDir, prefixes.gguf.slice(0, -1));
    ggufPath = platform.blobs.uri(`${prefixes.gguf}${ggufFileName(quantization)}`);
    artifacts.file.gguf = ggufPath;
  }
  return { artifacts, adapterPath: artifacts.raw.adapter ?? artifacts.raw.merged ?? null, ggufPath, adapter: Boolean(adapterDir) };
}
