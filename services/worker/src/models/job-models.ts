// A trained job's models as local files on this worker, made from what training left in blob storage and cached
// under the job's work folder: the adapter folder, the merged model (downloaded, or merged here when training
// did not keep one), GGUF files (converted here when missing) and the ONNX export; of the final model, or of one of the job's
// stored checkpoints. The export and inference processors both stand on it; concurrent asks for the same file
// share one build, and each build is told in the worker's log and the job's event log as it runs.
import fs from 'node:fs/promises';
import path from 'node:path';
import { Conflict, type Platform, type TrainingJobRow } from '@ftp/platform';
import { ggufFileName, jobPrefixes, trainsWholeModel, type JobPrefixes } from '@ftp/jobs/models';
import { jobConfig, type GgufQuantization, type TrainingConfig } from '@ftp/schema';
import { adapterGgufIn, baseModelGguf, downloadModel, ensureBaseModel, isFile, runCoreStep, type ModelBuildOptions } from './base-models.ts';
import { ONNX_CHECK_PROMPTS } from '../export/onnx-verify.ts';
import { buildFolder } from './blob-folders.ts';
import { once, type BuildStep } from './build-progress.ts';

/** A job's own folder on this machine: spec, dataset copy, checkpoints, model caches. */
export function jobWorkDir(platform: Pick<Platform, 'config'>, jobId: string): string {
  return path.join(platform.config.dataDir, 'work', jobId);
}

/** What a checkpoint holds only to resume training: not part of the model. */
const TRAINING_STATE = /^(optimizer\.pt|scheduler\.pt|scaler\.pt|rng_state.*\.pth|trainer_state\.json|training_args\.bin|\.complete)$/;

/** The local files of one job's models: its final model (the job completed) or its checkpoint `checkpointStep`.
 *  Every method builds what is missing and returns a path. */
export class JobModels {
  private readonly config: TrainingConfig;
  private readonly dir: string;
  readonly prefixes: JobPrefixes;

  constructor(
    private readonly platform: Platform,
    readonly job: TrainingJobRow,
    private readonly options: ModelBuildOptions = {},
    readonly checkpointStep?: number,
  ) {
    if (checkpointStep === undefined && job.status !== 'completed') {
      throw new Conflict(`training job ${job.job_id} is ${job.status}; its model exists once it has completed`);
    }
    this.config = jobConfig(job);
    this.dir = path.join(jobWorkDir(platform, job.job_id), 'models', ...(checkpointStep === undefined ? [] : [`checkpoint-${checkpointStep}`]));
    this.prefixes = jobPrefixes(job);
  }

  private get checkpointPrefix(): string {
    return `${this.prefixes.checkpoints}checkpoint-${this.checkpointStep}/`;
  }

  /** A build of this job's model, recorded in the log and in the job's event log (the console and `ftune jobs logs`
   *  show it), the request that asked for it told too. */
  private step(what: string, before?: () => Promise<unknown>): BuildStep {
    const { platform, job } = this;
    const of = this.checkpointStep === undefined ? `job ${job.job_id}` : `checkpoint ${this.checkpointStep} of job ${job.job_id}`;
    const sentence = what.replace('{job}', of);
    return {
      what: sentence,
      record: (message) => {
        platform.logger.info({ jobId: job.job_id }, message);
        // about: model — a note on the job's model, not on its training (the /v1 face leaves these out)
        void platform.jobs.appendEvent(job.job_id, 'log', { level: 'info', message, about: 'model' }).catch(() => undefined); // a deleted job
      },
      heartbeatMs: platform.config.PROGRESS_INTERVAL_S * 1000,
      ...(before ? { before } : {}),
    };
  }

  base(): Promise<string> {
    return ensureBaseModel(this.platform, this.config.provider, this.config.base_model_id, this.options);
  }

  /** The LoRA adapter folder; a Full job has none (409). */
  adapter(): Promise<string> {
    if (trainsWholeModel(this.job)) throw new Conflict(`training job ${this.job.job_id} trained the whole model (method ${this.config.method}); it has no adapter, use merged`);
    const folder = path.join(this.dir, 'adapter');
    return once(folder, () => isFile(path.join(folder, 'adapter_config.json')), () =>
      this.checkpointStep === undefined
        ? downloadModel(this.platform, this.prefixes.adapter, folder)
        : downloadModel(this.platform, this.checkpointPrefix, folder, (file) => !TRAINING_STATE.test(file)),
    this.step('copying the adapter of {job} from blob storage to this worker'), this.options.progress);
  }

  /** The whole fine-tuned model: stored by training (merged export or Full; a Full checkpoint is one), else
   *  merged here from base + adapter. */
  async merged(): Promise<string> {
    const folder = path.join(this.dir, 'merged');
    const stored = (this.checkpointStep !== undefined && trainsWholeModel(this.job)) || (this.checkpointStep === undefined && Boolean(this.job.artifacts.raw.merged));
    return once(folder, () => isFile(path.join(folder, 'config.json')), async () => {
      if (this.checkpointStep !== undefined && trainsWholeModel(this.job)) {
        return downloadModel(this.platform, this.checkpointPrefix, folder, (file) => !TRAINING_STATE.test(file));
      }
      if (this.checkpointStep === undefined && this.job.artifacts.raw.merged) return downloadModel(this.platform, this.prefixes.merged, folder);
      const [base, adapter] = [await this.base(), await this.adapter()];
      await buildFolder(folder, (temp) =>
        runCoreStep(this.platform, 'merge', { base_model: base, adapter, output_dir: temp }, path.join(this.dir, 'merge.json'), this.options));
    }, stored
      ? this.step('copying the model of {job} from blob storage to this worker')
      : this.step('merging the adapter of {job} into its base model', async () => [await this.base(), await this.adapter()]), this.options.progress);
  }

  /** The merged model as GGUF (with its Ollama Modelfile beside it): the one training stored, or converted here.
   *  One folder per quantization, since the Modelfile names its own .gguf file. */
  async gguf(quantization: GgufQuantization): Promise<string> {
    const name = ggufFileName(quantization);
    const folder = path.join(this.dir, `gguf-${quantization}`);
    const file = path.join(folder, name);
    return once(file, () => isFile(file), async () => {
      if (await this.storedGguf(name)) {
        return downloadModel(this.platform, this.prefixes.gguf, folder, (file) => file === name || file === 'Modelfile');
      }
      const merged = await this.merged();
      await buildFolder(folder, (temp) =>
        runCoreStep(this.platform, 'gguf', { model: merged, output_file: path.join(temp, name), quantization }, path.join(this.dir, `gguf-${quantization}.json`), this.options));
    }, this.step(`making the GGUF (${quantization}) of {job} for llama.cpp`, async () => (await this.storedGguf(name)) || this.merged()), this.options.progress);
  }

  /** Whether training stored this GGUF (a job's own, not a checkpoint's): then it is copied, not converted. */
  private async storedGguf(name: string): Promise<boolean> {
    return this.checkpointStep === undefined && Boolean(await this.platform.blobs.stat(`${this.prefixes.gguf}${name}`));
  }

  /** The merged model in transformers.js's layout (`<folder>/model`: onnx/ with fp32, fp16, q4 and q4f16, config,
   *  tokenizer, chat template) and beside it transformers' greedy tokens for the check prompts
   *  (`<folder>/reference.json`), which the export verifies the ONNX models against. */
  async onnx(): Promise<{ model: string; reference: string }> {
    const folder = path.join(this.dir, 'onnx');
    const paths = { model: path.join(folder, 'model'), reference: path.join(folder, 'reference.json') };
    await once(paths.reference, () => isFile(paths.reference), async () => {
      const merged = await this.merged();
      await buildFolder(folder, async (temp) => {
        await fs.mkdir(temp, { recursive: true });
        await fs.writeFile(path.join(temp, 'prompts.json'), JSON.stringify(ONNX_CHECK_PROMPTS));
        await runCoreStep(this.platform, 'onnx', {
          model: merged, output_dir: path.join(temp, 'model'), prompts_file: path.join(temp, 'prompts.json'), reference_file: path.join(temp, 'reference.json'),
        }, path.join(this.dir, 'onnx.json'), this.options);
      });
    }, this.step('exporting {job} to ONNX (fp32, fp16, q4, q4f16) for ONNX Runtime and transformers.js', () => this.merged()), this.options.progress);
    return paths;
  }

  /** The LoRA adapter as a GGUF LoRA file, for llama.cpp to apply over the base model's GGUF. */
  adapterGguf(): Promise<string> {
    const step = this.step('converting the adapter of {job} to a GGUF LoRA adapter for llama.cpp', async () => [await this.base(), await this.adapter()]);
    return adapterGgufIn(this.platform, this.dir, this, step, this.options);
  }

  /** The base model of this job as GGUF (what a GGUF LoRA adapter applies over). */
  async baseGguf(quantization: GgufQuantization): Promise<string> {
    return baseModelGguf(this.platform, await this.base(), quantization, this.options);
  }
}
