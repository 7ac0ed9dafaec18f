// Base models as local folders on this worker: MODELS_DIR is this machine's cache of the model store (the blob
// store's `models/` prefix). A stored model is copied into the cache on first use; a folder only in the cache
// (an operator put it there) is put into the store, so every other worker can reach it; a hub model is
// downloaded once (the core's import-model) and then put into the store. Also: a base model as GGUF, cached. Each
// build says what it does while it runs (build-progress.ts).
import fs from 'node:fs/promises';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { describeCoreFailure, runCore, type CoreCommand } from '@ftp/core-client';
import type { JobSecretValues, Platform } from '@ftp/platform';
import { ggufFileName, locateBaseModel, modelStorePrefix, type ModelLocation } from '@ftp/jobs/models';
import type { GgufQuantization } from '@ftp/schema';
import { buildFolder, downloadPrefix, uploadFolder } from './blob-folders.ts';
import { once, type BuildStep, type ProgressListener } from './build-progress.ts';

/** A model could not be made (a core step failed, or nothing was stored); the message says which and why. */
export class ModelBuildError extends Error {
  constructor(message: string, readonly cancelled = false) {
    super(message);
    this.name = 'ModelBuildError';
  }
}

export interface ModelBuildOptions {
  secrets?: JobSecretValues;
  signal?: AbortSignal;
  /** Told what a build this asks for does, and how far it is, while it runs (whoever waits: a request, a job). */
  progress?: ProgressListener;
  /** Nobody waits on it: its core steps run at the lowest CPU priority (runCore's `background`). */
  background?: boolean;
}

/** A build step that the worker's log records. */
export function loggedStep(platform: Platform, what: string, fields: Record<string, unknown> = {}): BuildStep {
  return { what, record: (message) => platform.logger.info(fields, message), heartbeatMs: platform.config.PROGRESS_INTERVAL_S * 1000 };
}

export const isFile = (p: string) => fs.stat(p).then((s) => s.isFile(), () => false);

/** Runs one core step; throws ModelBuildError with the core's own explanation when it fails. */
export async function runCoreStep(platform: Platform, command: CoreCommand, spec: Record<string, unknown>, specFile: string, options: ModelBuildOptions = {}): Promise<void> {
  const result = await runCore({
    command,
    spec,
    specFile,
    python: platform.config.CORE_PYTHON,
    env: { ...(options.secrets?.hubToken ? { HF_TOKEN: options.secrets.hubToken } : {}), HF_ENDPOINT: platform.config.HF_ENDPOINT, FTCORE_PROGRESS_INTERVAL: String(platform.config.PROGRESS_INTERVAL_S) },
    onStderr: (line) => platform.logger.debug({ core: line }),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.background ? { background: true } : {}),
  });
  if (result.cancelled) throw new ModelBuildError(`${command} was cancelled`, true);
  if (!result.done || result.exitCode !== 0) throw new ModelBuildError(`${command}: ${describeCoreFailure(result)}`);
}

/** Copies the blobs under `prefix` into `folder`; a prefix with nothing stored is a ModelBuildError. */
export async function downloadModel(platform: Platform, prefix: string, folder: string, keep?: (path: string) => boolean): Promise<void> {
  await downloadPrefix(platform, prefix, folder, keep).catch((err: Error) => {
    throw err.message.startsWith('nothing stored under') ? new ModelBuildError(err.message) : err;
  });
}

/** The local folder of a located base model, fetched into this machine's cache (and the store) as needed. */
export async function baseModelFolder(platform: Platform, location: ModelLocation, options: ModelBuildOptions = {}): Promise<string> {
  if (location.kind === 'path') return location.folder;
  const { folder, modelId } = location;
  const prefix = modelStorePrefix(modelId);
  const cached = () => isFile(path.join(folder, 'config.json'));
  const step = (what: string) => loggedStep(platform, what, { model: modelId });
  if (location.kind === 'store') {
    return once(folder, cached, () => downloadModel(platform, prefix, folder), step(`copying base model ${modelId} from the model store to this worker`), options.progress);
  }
  await once(`${folder}#store`, async () => Boolean(await platform.blobs.stat(`${prefix}config.json`)), async () => {
    if (location.kind === 'hub') {
      await once(folder, cached, () =>
        buildFolder(folder, (temp) =>
          runCoreStep(platform, 'import-model', { source: modelId, provider: 'hub', output_dir: temp },
            path.join(platform.config.dataDir, 'work', 'imports', `${hashOf(modelId)}.json`), options)),
        step(`downloading base model ${modelId} from the model hub`), options.progress);
    }
    await uploadFolder(platform, folder, prefix.slice(0, -1));
  }, step(`putting base model ${modelId} into the model store`), options.progress);
  return folder;
}

/** A LoRA adapter folder as a GGUF LoRA file, for llama.cpp to apply over its base model's GGUF: built once, in
 *  `dir`/gguf-lora, by the core's gguf step (a job's adapter, or a Tinker run's sampler weights). */
export function adapterGgufIn(
  platform: Platform, dir: string, model: { base(): Promise<string>; adapter(): Promise<string> }, step: BuildStep, options: ModelBuildOptions = {},
): Promise<string> {
  const folder = path.join(dir, 'gguf-lora');
  const file = path.join(folder, 'adapter.gguf');
  return once(file, () => isFile(file), async () => {
    const [base, adapter] = [await model.base(), await model.adapter()];
    await buildFolder(folder, (temp) => runCoreStep(platform, 'gguf', { model: base, adapter, output_file: path.join(temp, 'adapter.gguf') }, path.join(dir, 'gguf-lora.json'), options));
  }, step, options.progress);
}

/** Locates `modelId` (store, cache, hub) and returns its local folder. */
export async function ensureBaseModel(platform: Platform, provider: 'hub' | 'local', modelId: string, options: ModelBuildOptions = {}): Promise<string> {
  const location = await locateBaseModel(platform, provider, modelId, { hubToken: options.secrets?.hubToken });
  return baseModelFolder(platform, location, options);
}

const hashOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);

/** A base model (not a trained job) as GGUF, cached under DATA_DIR/cache/base-gguf, one folder per model and
 *  quantization (each GGUF has its own Modelfile beside it), built in a temp folder and renamed into place. */
export async function baseModelGguf(platform: Platform, folder: string, quantization: GgufQuantization, options: ModelBuildOptions = {}): Promise<string> {
  const dir = path.join(platform.config.dataDir, 'cache', 'base-gguf', hashOf(path.resolve(folder)), quantization);
  const name = ggufFileName(quantization);
  const file = path.join(dir, name);
  return once(file, () => isFile(file), () =>
    buildFolder(dir, (temp) => runCoreStep(platform, 'gguf', { model: folder, output_file: path.join(temp, name), quantization }, `${dir}.json`, options)),
  loggedStep(platform, `converting base model ${path.basename(folder)} to GGUF (${quantization}) for llama.cpp`), options.progress);
}
