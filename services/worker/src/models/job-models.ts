// A trained job's models as local files, made from what training left in blob storage and cached under the
// job's work folder (so DELETE /jobs/{id} removes them): the adapter folder, the merged model (downloaded, or
// merged here when training did not keep one), and GGUF files (converted here when missing). The export
// worker and the inference service both stand on it; concurrent asks for the same file share one build.
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createHash } from 'node:crypto';
import { describeCoreFailure, runCore, type CoreCommand } from '@ftp/core-client';
import { Conflict, type JobSecretValues, type Platform, type TrainingJobRow } from '@ftp/platform';
import type { GgufQuantization, TrainingConfig } from '@ftp/schema';
import { locateBaseModel } from '../training/model-store.ts';

/** A model could not be made (a core step failed); the message says which step and why. */
export class ModelBuildError extends Error {
  constructor(message: string, readonly cancelled = false) {
    super(message);
    this.name = 'ModelBuildError';
  }
}

export interface ModelBuildOptions {
  secrets?: JobSecretValues;
  signal?: AbortSignal;
}

/** A job's own folder on this machine: spec, dataset copy, checkpoints, model caches. */
export function jobWorkDir(platform: Pick<Platform, 'config'>, jobId: string): string {
  return path.join(platform.config.dataDir, 'work', jobId);
}

/** One build per output path at a time, in this process: the second asker waits for the first. */
const building = new Map<string, Promise<string>>();

async function once(target: string, exists: () => Promise<boolean>, build: () => Promise<void>): Promise<string> {
  const pending = building.get(target);
  if (pending) return pending;
  const run = (async () => {
    if (!(await exists())) await build();
    return target;
  })().finally(() => building.delete(target));
  building.set(target, run);
  return run;
}

/** The name a GGUF of the whole model has wherever it is stored: training's `gguf/`, exports, caches. */
export const ggufFileName = (quantization: GgufQuantization): string => `model-${quantization}.gguf`;

const isFile = (p: string) => fs.stat(p).then((s) => s.isFile(), () => false);

/** Runs one core step; throws ModelBuildError with the core's own explanation when it fails. */
export async function runCoreStep(
  platform: Platform,
  command: CoreCommand,
  spec: Record<string, unknown>,
  specFile: string,
  options: ModelBuildOptions = {},
): Promise<void> {
  const result = await runCore({
    command,
    spec,
    specFile,
    python: platform.config.CORE_PYTHON,
    env: { ...(options.secrets?.hubToken ? { HF_TOKEN: options.secrets.hubToken } : {}), HF_ENDPOINT: platform.config.HF_ENDPOINT },
    onStderr: (line) => platform.logger.debug({ core: line }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (result.cancelled) throw new ModelBuildError(`${command} was cancelled`, true);
  if (!result.done || result.exitCode !== 0) throw new ModelBuildError(`${command}: ${describeCoreFailure(result)}`);
}

/** Fills `folder` through `build` writing into a temp folder that is renamed into place once complete, so a
 *  build cut short (crash, cancel, failed step) never leaves a half-written folder that looks finished. */
async function buildFolder(folder: string, build: (temp: string) => Promise<void>): Promise<void> {
  const temp = `${folder}.part-${process.pid}`;
  await fs.rm(temp, { recursive: true, force: true });
  try {
    await build(temp);
    await fs.rm(folder, { recursive: true, force: true });
    await fs.rename(temp, folder);
  } finally {
    await fs.rm(temp, { recursive: true, force: true });
  }
}

/** Copies the blobs under `prefix` (all, or the `only` names) into `folder`. */
async function downloadFolder(platform: Platform, prefix: string, folder: string, only?: readonly string[]): Promise<void> {
  const blobs = (await platform.blobs.list(prefix)).filter((b) => !only || only.includes(b.key.slice(prefix.length)));
  // uri() takes a key, and a key has no trailing slash.
  if (blobs.length === 0) throw new ModelBuildError(`nothing stored under ${platform.blobs.uri(prefix.replace(/\/$/, ''))}`);
  await buildFolder(folder, async (temp) => {
    for (const blob of blobs) {
      const file = path.join(temp, ...blob.key.slice(prefix.length).split('/'));
      await fs.mkdir(path.dirname(file), { recursive: true });
      await pipeline(await platform.blobs.get(blob.key), createWriteStream(file));
    }
  });
}

/** The base model's local folder; a hub model is imported into the model store first. */
export async function baseModelFolder(platform: Platform, provider: 'hub' | 'local', modelId: string, options: ModelBuildOptions = {}): Promise<string> {
  const location = await locateBaseModel(platform.config, provider, modelId, options.secrets?.hubToken);
  if (location.kind === 'local') return location.folder;
  return once(location.folder, () => isFile(path.join(location.folder, 'config.json')), () =>
    runCoreStep(platform, 'import-model', { source: location.hubId, provider: 'hub', output_dir: location.folder },
      path.join(platform.config.dataDir, 'work', 'imports', `${createHash('sha256').update(modelId).digest('hex').slice(0, 16)}.json`), options));
}

/** A base model (not a trained job) as GGUF, cached under DATA_DIR/cache/base-gguf, one folder per model and
 *  quantization (each GGUF has its own Modelfile beside it), built in a temp folder and renamed into place. */
export async function baseModelGguf(platform: Platform, folder: string, quantization: GgufQuantization, options: ModelBuildOptions = {}): Promise<string> {
  const key = createHash('sha256').update(path.resolve(folder)).digest('hex').slice(0, 16);
  const dir = path.join(platform.config.dataDir, 'cache', 'base-gguf', key, quantization);
  const name = ggufFileName(quantization);
  const file = path.join(dir, name);
  return once(file, () => isFile(file), async () => {
    await fs.mkdir(path.dirname(dir), { recursive: true });
    await buildFolder(dir, (temp) =>
      runCoreStep(platform, 'gguf', { model: folder, output_file: path.join(temp, name), quantization }, `${dir}.json`, options));
  });
}

/** The local files of one completed job's models. Every method builds what is missing and returns a path. */
export class JobModels {
  private readonly config: TrainingConfig;
  private readonly dir: string;

  constructor(
    private readonly platform: Platform,
    readonly job: TrainingJobRow,
    private readonly options: ModelBuildOptions = {},
  ) {
    if (job.status !== 'completed') throw new Conflict(`training job ${job.job_id} is ${job.status}; its model exists once it has completed`);
    this.config = job.training_config as unknown as TrainingConfig;
    this.dir = path.join(jobWorkDir(platform, job.job_id), 'models');
  }

  /** True for LoRA/QLoRA jobs (an adapter over the base); false for Full jobs (a whole model). */
  get hasAdapter(): boolean {
    return Boolean(this.job.artifacts.raw.adapter);
  }

  /** Blob prefixes of what training stored (see run-training-job.ts). */
  get prefixes() {
    const p = this.job.blob_prefix;
    return { adapter: `${p}adapter/`, merged: `${p}merged/`, gguf: `${p}gguf/` };
  }

  base(): Promise<string> {
    return baseModelFolder(this.platform, this.config.provider, this.config.base_model_id, this.options);
  }

  /** The LoRA adapter folder; a Full job has none (409). */
  adapter(): Promise<string> {
    if (!this.hasAdapter) throw new Conflict(`training job ${this.job.job_id} trained the whole model (method ${this.config.method}); it has no adapter, use merged`);
    const folder = path.join(this.dir, 'adapter');
    return once(folder, () => isFile(path.join(folder, 'adapter_config.json')), () => downloadFolder(this.platform, this.prefixes.adapter, folder));
  }

  /** The whole fine-tuned model: stored by training (merged export or Full), else merged here from base + adapter. */
  async merged(): Promise<string> {
    const folder = path.join(this.dir, 'merged');
    return once(folder, () => isFile(path.join(folder, 'config.json')), async () => {
      if (this.job.artifacts.raw.merged) return downloadFolder(this.platform, this.prefixes.merged, folder);
      const [base, adapter] = [await this.base(), await this.adapter()];
      await buildFolder(folder, (temp) =>
        runCoreStep(this.platform, 'merge', { base_model: base, adapter, output_dir: temp }, path.join(this.dir, 'merge.json'), this.options));
    });
  }

  /** The merged model as GGUF (with its Ollama Modelfile beside it): the one training stored, or converted here.
   *  One folder per quantization, since the Modelfile names its own .gguf file. */
  async gguf(quantization: GgufQuantization): Promise<string> {
    const name = ggufFileName(quantization);
    const folder = path.join(this.dir, `gguf-${quantization}`);
    const file = path.join(folder, name);
    return once(file, () => isFile(file), async () => {
      if (await this.platform.blobs.stat(`${this.prefixes.gguf}${name}`)) {
        return downloadFolder(this.platform, this.prefixes.gguf, folder, [name, 'Modelfile']);
      }
      const merged = await this.merged();
      await buildFolder(folder, (temp) =>
        runCoreStep(this.platform, 'gguf', { model: merged, output_file: path.join(temp, name), quantization }, path.join(this.dir, `gguf-${quantization}.json`), this.options));
    });
  }

  /** The LoRA adapter as a GGUF LoRA file, for llama.cpp to apply over the base model's GGUF. */
  async adapterGguf(): Promise<string> {
    const folder = path.join(this.dir, 'gguf-lora');
    const file = path.join(folder, 'adapter.gguf');
    return once(file, () => isFile(file), async () => {
      const [base, adapter] = [await this.base(), await this.adapter()];
      await buildFolder(folder, (temp) =>
        runCoreStep(this.platform, 'gguf', { model: base, adapter, output_file: path.join(temp, 'adapter.gguf') }, path.join(this.dir, 'gguf-lora.json'), this.options));
    });
  }

  /** The base model of this job as GGUF (what a GGUF LoRA adapter applies over). */
  async baseGguf(quantization: GgufQuantization): Promise<string> {
    return baseModelGguf(this.platform, await this.base(), quantization, this.options);
  }
}
