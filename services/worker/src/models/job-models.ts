// A trained job's models as local files on this worker, made from what training left in blob storage and cached
// under the job's work folder: the adapter folder, the merged model (downloaded, or merged here when training
// did not keep one), GGUF files (converted here when missing) and the ONNX export; of the final model, or of one of the job's
// stored checkpoints. The export and inference processors both stand on it; concurrent asks for the same file
// share one build, and each build is told in the worker's log and the job's event log as it runs.
import path from 'node:path';
import { Conflict, type Platform, type TrainingJobRow } from '@ftp/platform';
import { jobPrefixes, trainsWholeModel, type JobPrefixes } from '@ftp/jobs/models';
import { jobConfig, type TrainingConfig } from '@ftp/schema';
import { downloadModel, ensureBaseModel, isFile, type ModelBuildOptions } from './base-models.ts';
import { AdapterModels } from './adapter-models.ts';
import { once, type BuildStep } from './build-progress.ts';

/** A job's own folder on this machine: spec, dataset copy, checkpoints, model caches. */
export function jobWorkDir(platform: Pick<Platform, 'config'>, jobId: string): string {
  return path.join(platform.config.dataDir, 'work', jobId);
}

/** What a checkpoint holds only to resume training: not part of the model. */
const TRAINING_STATE = /^(optimizer\.pt|scheduler\.pt|scaler\.pt|rng_state.*\.pth|trainer_state\.json|training_args\.bin|\.complete)$/;

/** The local files of one job's models: its final model (the job completed) or its checkpoint `checkpointStep`.
 *  Every method builds what is missing and returns a path. */
export class JobModels extends AdapterModels {
  private readonly config: TrainingConfig;
  readonly prefixes: JobPrefixes;

  constructor(
    platform: Platform,
    readonly job: TrainingJobRow,
    options: ModelBuildOptions = {},
    readonly checkpointStep?: number,
  ) {
    if (checkpointStep === undefined && job.status !== 'completed') {
      throw new Conflict(`training job ${job.job_id} is ${job.status}; its model exists once it has completed`);
    }
    super(platform, path.join(jobWorkDir(platform, job.job_id), 'models', ...(checkpointStep === undefined ? [] : [`checkpoint-${checkpointStep}`])), options);
    this.config = jobConfig(job);
    this.prefixes = jobPrefixes(job);
  }

  private get checkpointPrefix(): string {
    return `${this.prefixes.checkpoints}checkpoint-${this.checkpointStep}/`;
  }

  /** A build of this job's model, recorded in the log and in the job's event log (the console and `ftune jobs logs`
   *  show it), the request that asked for it told too. */
  protected step(what: string, before?: () => Promise<unknown>): BuildStep {
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
  override merged(): Promise<string> {
    const fullCheckpoint = this.checkpointStep !== undefined && trainsWholeModel(this.job);
    const storedMerged = this.checkpointStep === undefined && Boolean(this.job.artifacts.raw.merged);
    if (!fullCheckpoint && !storedMerged) return super.merged();
    const folder = path.join(this.dir, 'merged');
    return once(folder, () => isFile(path.join(folder, 'config.json')), () =>
      fullCheckpoint
        ? downloadModel(this.platform, this.checkpointPrefix, folder, (file) => !TRAINING_STATE.test(file))
        : downloadModel(this.platform, this.prefixes.merged, folder),
    this.step('copying the model of {job} from blob storage to this worker'), this.options.progress);
  }

  /** Training stored this GGUF (a job's own, not a checkpoint's): copied, not converted. */
  protected override async hasStoredGguf(name: string): Promise<boolean> {
    return this.checkpointStep === undefined && Boolean(await this.platform.blobs.stat(`${this.prefixes.gguf}${name}`));
  }

  protected override async storedGguf(name: string, folder: string): Promise<boolean> {
    if (!(await this.hasStoredGguf(name))) return false;
    await downloadModel(this.platform, this.prefixes.gguf, folder, (file) => file === name || file === 'Modelfile');
    return true;
  }
}
