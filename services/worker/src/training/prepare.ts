// Preparing a training job: the base model as a local folder (from this worker's cache, the model store or the
// hub), the dataset splits as local files (images copied beside them), the newest checkpoint of an earlier run
// (this machine's or the stored one), and the core's spec, also stored with the job as config.json.
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createWriteStream } from 'node:fs';
import type { Platform, ProcessedDatasetRow, TrainingJobRow } from '@ftp/platform';
import { locateBaseModel } from '@ftp/jobs/models';
import { jobConfig } from '@ftp/schema';
import { baseModelFolder } from '../models/base-models.ts';
import { JobModels, jobWorkDir } from '../models/job-models.ts';
import { localizeImages } from './dataset-files.ts';
import { restoreCheckpoint } from './checkpoints.ts';
import { trainSpec } from './core-spec.ts';
import { ownWorkDir } from '../work-dirs.ts';
import type { JobContext } from './job-context.ts';

export interface TrainingInputs {
  baseModel: string;
  outputDir: string;
  spec: Record<string, unknown>;
  specFile: string;
  /** The checkpoint step the run continues from (a resumed job), if any. */
  resumeStep?: number;
}

/** Failures with a sentence for the user (the job's `error`). */
export class JobFailure extends Error {}

async function download(platform: Platform, key: string, file: string): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  await pipeline(await platform.blobs.get(key), createWriteStream(file));
}

/** The dataset's train (and test) split as local JSONL files in `folder`, a vision dataset's images beside them. */
export async function downloadSplits(platform: Platform, dataset: ProcessedDatasetRow, folder: string): Promise<{ trainFile: string; testFile?: string }> {
  const split = (name: string) => dataset.splits.find((s) => s.split_name === name);
  const trainFile = path.join(folder, 'train.jsonl');
  await download(platform, split('train')!.blob_key, trainFile);
  let testFile: string | undefined;
  if (split('test')) {
    testFile = path.join(folder, 'test.jsonl');
    await download(platform, split('test')!.blob_key, testFile);
  }
  if (dataset.modality === 'vision') {
    await localizeImages(platform.blobs, { train: trainFile, ...(testFile ? { test: testFile } : {}) }, path.join(folder, 'images'));
  }
  return { trainFile, ...(testFile ? { testFile } : {}) };
}

export async function prepareTraining(ctx: JobContext, job: TrainingJobRow): Promise<TrainingInputs> {
  const { platform } = ctx;
  const config = jobConfig(job);
  const work = jobWorkDir(platform, job.job_id);
  await ownWorkDir(work, ctx.workerId);
  const dataset = job.processed_dataset_id ? await platform.datasets.getProcessed(job.user_id, job.processed_dataset_id) : undefined;
  if (!dataset) throw new JobFailure(`processed dataset ${job.processed_dataset_id ?? '(none)'} no longer exists`);

  const options = { ...(ctx.secrets ? { secrets: ctx.secrets } : {}), signal: ctx.signal };
  const location = await locateBaseModel(platform, config.provider, config.base_model_id, { hubToken: ctx.secrets?.hubToken });
  if (location.kind === 'hub') platform.logger.info({ jobId: job.job_id, model: location.modelId }, 'downloading base model');
  let baseModel = await baseModelFolder(platform, location, options);
  // Continuing another job: a LoRA job trains on its adapter; a Full job starts from its whole model.
  let initAdapter: string | undefined;
  if (job.parent_job_id) {
    const parent = await platform.jobs.getForWorker(job.parent_job_id);
    if (!parent) throw new JobFailure(`training job ${job.parent_job_id}, which this job continues, no longer exists`);
    const parentModels = new JobModels(platform, parent, options, job.parent_checkpoint_step ?? undefined);
    if (config.method === 'Full') baseModel = await parentModels.merged();
    else initAdapter = await parentModels.adapter();
  }

  const { trainFile, testFile } = await downloadSplits(platform, dataset, path.join(work, 'data'));

  const outputDir = path.join(work, 'run');
  const resumeStep = await restoreCheckpoint(platform, job, path.join(outputDir, 'checkpoints'));
  const resume = resumeStep !== undefined;
  const spec = trainSpec(config, { baseModel, trainFile, testFile, outputDir, ...(initAdapter ? { initAdapter } : {}) }, { resume, mlflowUri: platform.config.MLFLOW_TRACKING_URI });
  await platform.blobs.put(`${job.blob_prefix}config.json`, JSON.stringify(spec, null, 2));
  return { baseModel, outputDir, spec, specFile: path.join(work, 'spec.json'), ...(resume ? { resumeStep } : {}) };
}
