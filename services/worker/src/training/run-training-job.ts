// One training job, start to end: preparing (model + dataset to local files, spec) → training (the core's
// events become the job's progress, metrics and event log) → artifacts to blob storage → completed; or
// failed with the core's error, "cancelled by user", or what went wrong here.
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createWriteStream } from 'node:fs';
import { describeCoreFailure, runCore, type CoreEvent, type CoreResult } from '@ftp/core-client';
import { ggufFileName, jobWorkDir, ModelBuildError, runCoreStep } from '../models/job-models.ts';
import { uploadFolder } from '../models/blob-folders.ts';
import { AppError, UnprocessableEntity, type ArtifactGroupsRow, type JobSecretValues, type Platform, type TrainingJobRow } from '@ftp/platform';
import type { TrainingConfig } from '@ftp/schema';
import { locateBaseModel } from './model-store.ts';
import { localizeImages } from './dataset-files.ts';
import { queueExport } from '../export/queue-export.ts';
import { secretsEnvironment, trackerEnvironment, trainSpec } from './core-spec.ts';

export const CANCELLED_BY_USER = 'cancelled by user';
export const WORKER_STOPPED =
  'the worker stopped while this job was running (process exit or crash); submit the job again';
/** The abort reason a worker uses when it shuts down, as opposed to a user's cancel. */
export const SHUTDOWN = 'shutdown';

const stopReason = (signal: AbortSignal): string => (signal.reason === SHUTDOWN ? WORKER_STOPPED : CANCELLED_BY_USER);

export interface JobContext {
  platform: Platform;
  workerId: string;
  secrets?: JobSecretValues;
  /** Aborted when the user cancels; the core then checkpoints and stops. */
  signal: AbortSignal;
}


async function download(platform: Platform, key: string, file: string): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  await pipeline(await platform.blobs.get(key), createWriteStream(file));
}

async function runStep(ctx: JobContext, job: TrainingJobRow, command: 'merge' | 'import-model' | 'gguf', spec: Record<string, unknown>): Promise<void> {
  const specFile = path.join(jobWorkDir(ctx.platform, job.job_id), `${command}.json`);
  await runCoreStep(ctx.platform, command, spec, specFile, { ...(ctx.secrets ? { secrets: ctx.secrets } : {}), signal: ctx.signal }).catch((err: unknown) => {
    if (err instanceof ModelBuildError) throw new JobFailure(err.cancelled ? stopReason(ctx.signal) : err.message);
    throw err;
  });
}

class JobFailure extends Error {}

export async function runTrainingJob(ctx: JobContext, jobId: string): Promise<void> {
  const { platform } = ctx;
  const jobs = platform.jobs;
  const job = await jobs.update(jobId, { status: 'preparing', worker_id: ctx.workerId, started_at: new Date() }, ['queued']);
  if (!job) return; // cancelled or deleted while queued
  const log = platform.logger.child({ jobId });
  const config = job.training_config as unknown as TrainingConfig;
  const work = jobWorkDir(platform, jobId);
  try {
    // Preparing: the base model and the dataset splits as local files.
    const dataset = await platform.datasets.getProcessed(job.user_id, job.processed_dataset_id);
    if (!dataset) throw new JobFailure(`processed dataset ${job.processed_dataset_id} no longer exists`);
    const model = await locateBaseModel(platform.config, config.provider, config.base_model_id, ctx.secrets?.hubToken);
    if (model.kind === 'hub') {
      log.info({ model: model.hubId }, 'downloading base model');
      await runStep(ctx, job, 'import-model', { source: model.hubId, provider: 'hub', output_dir: model.folder });
    }
    const split = (name: string) => dataset.splits.find((s) => s.split_name === name);
    const trainFile = path.join(work, 'data', 'train.jsonl');
    await download(platform, split('train')!.blob_key, trainFile);
    let testFile: string | undefined;
    if (split('test')) {
      testFile = path.join(work, 'data', 'test.jsonl');
      await download(platform, split('test')!.blob_key, testFile);
    }
    if (dataset.modality === 'vision') {
      await localizeImages(platform.blobs, { train: trainFile, ...(testFile ? { test: testFile } : {}) }, path.join(work, 'data', 'images'));
    }
    const outputDir = path.join(work, 'run');
    const resume = await fs.stat(path.join(outputDir, 'checkpoints')).then(() => true, () => false);
    const mlflowUri = platform.config.MLFLOW_TRACKING_URI;
    const spec = trainSpec(job, { baseModel: model.folder, trainFile, testFile, outputDir }, { resume, mlflowUri });
    await platform.blobs.put(`${job.blob_prefix}config.json`, JSON.stringify(spec, null, 2));

    // Training: every event updates the row, in order.
    const produced = new Map<string, string>();
    let metrics: Record<string, number> = {};
    const onEvent = async (event: CoreEvent): Promise<void> => {
      switch (event.event) {
        case 'progress': {
          const progress = {
            step: event.step, total_steps: event.total_steps, epoch: event.epoch, loss: event.loss,
            eta_seconds: event.eta_seconds, learning_rate: event.learning_rate, tokens_per_second: event.tokens_per_second,
          };
          // The first progress event moves the job to training; later ones only update progress.
          const moved = await jobs.update(jobId, { status: 'training', progress }, ['preparing']);
          if (!moved) await jobs.update(jobId, { progress }, ['training']);
          await jobs.appendEvent(jobId, 'progress', progress);
          break;
        }
        case 'metrics': {
          const values = { eval_loss: event.eval_loss, perplexity: event.perplexity, accuracy: event.accuracy, eval_runtime: event.eval_runtime, ...event.extra };
          metrics = { ...metrics, ...Object.fromEntries(Object.entries(values).filter((e): e is [string, number] => typeof e[1] === 'number')) };
          await jobs.update(jobId, { metrics });
          await jobs.appendEvent(jobId, 'metrics', { step: event.step, ...values });
          break;
        }
        case 'artifact':
          produced.set(event.kind, event.path);
          break;
        case 'tracker':
          await jobs.update(jobId, { tracker_url: event.url });
          break;
        case 'log':
          if (event.level === 'warning' || event.level === 'error') await jobs.appendEvent(jobId, 'log', { level: event.level, message: event.message });
          break;
        default:
          break;
      }
    };
    const result: CoreResult = await runCore({
      command: 'train',
      spec,
      specFile: path.join(work, 'spec.json'),
      python: platform.config.CORE_PYTHON,
      env: { ...trackerEnvironment(config, mlflowUri, job.job_name), ...secretsEnvironment(ctx.secrets, config) },
      onEvent,
      onStderr: (line) => log.debug({ core: line }),
      signal: ctx.signal,
    });
    if (result.cancelled) throw new JobFailure(stopReason(ctx.signal));
    if (!result.done || result.exitCode !== 0) throw new JobFailure(describeCoreFailure(result));

    // Artifacts: the adapter (LoRA/QLoRA) or the whole model (Full) go to blob storage; merged on request.
    const artifacts: ArtifactGroupsRow = { file: {}, raw: {}, hub: {} };
    let adapterPath: string | null = null;
    const adapterDir = produced.get('adapter');
    const modelDir = produced.get('model') ?? produced.get('merged');
    const { format, include_gguf: includeGguf, gguf_quantization: quantization } = config.export_config;
    let fullModelDir = modelDir;
    if (adapterDir) {
      adapterPath = await uploadFolder(platform, adapterDir, `${job.blob_prefix}adapter`);
      artifacts.raw.adapter = adapterPath;
      if (format === 'merged' || includeGguf) {
        fullModelDir = path.join(work, 'merged');
        await runStep(ctx, job, 'merge', { base_model: model.folder, adapter: adapterDir, output_dir: fullModelDir });
      }
      if (format === 'merged') artifacts.raw.merged = await uploadFolder(platform, fullModelDir!, `${job.blob_prefix}merged`);
    } else if (modelDir) {
      artifacts.raw.merged = await uploadFolder(platform, modelDir, `${job.blob_prefix}merged`);
    } else {
      throw new JobFailure('the ML core finished without reporting an adapter or a model');
    }
    // GGUF of the whole model (merged or full-trained), with its Ollama Modelfile beside it.
    let ggufPath: string | null = null;
    if (includeGguf) {
      const ggufDir = path.join(work, 'gguf');
      await runStep(ctx, job, 'gguf', { model: fullModelDir, output_file: path.join(ggufDir, ggufFileName(quantization)), quantization });
      await uploadFolder(platform, ggufDir, `${job.blob_prefix}gguf`);
      ggufPath = platform.blobs.uri(`${job.blob_prefix}gguf/${ggufFileName(quantization)}`);
      artifacts.file.gguf = ggufPath;
    }
    await jobs.update(jobId, { status: 'completed', artifacts, adapter_path: adapterPath ?? artifacts.raw.merged ?? null, gguf_path: ggufPath, finished_at: new Date() }, ['training', 'preparing']);
    log.info('training job completed');
    // destination hub: the trained model (and its GGUF) go to the repo as exports, followed in latest_export.
    if (config.export_config.destination === 'hub') {
      const hub = { jobId, userId: job.user_id, destination: ['hub' as const], hubRepoId: config.export_config.hub_repo_id, hubToken: ctx.secrets?.hubToken };
      await queueExport(platform, { ...hub, type: adapterDir && format === 'adapter' ? 'adapter' : 'merged' });
      if (includeGguf) await queueExport(platform, { ...hub, type: 'gguf', ggufQuantization: quantization });
    }
  } catch (err) {
    // Known failures carry a sentence for the user; anything else is the worker's own fault, logged in full.
    const message =
      err instanceof UnprocessableEntity ? err.issues.map((i) => i.msg).join('; ')
      : err instanceof JobFailure || err instanceof AppError ? err.message
      : `the worker failed: ${(err as Error).message}`;
    if (!(err instanceof JobFailure || err instanceof AppError)) log.error({ err }, 'training job failed');
    await jobs.update(jobId, { status: 'failed', error: message, finished_at: new Date() }, ['queued', 'preparing', 'training']);
  }
}
