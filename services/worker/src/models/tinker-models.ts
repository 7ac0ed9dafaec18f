// The files of a Tinker run's sampler weights (`tinker:<run id>:<name>`, a model /v1 chat, evaluations and exports
// take like a job's checkpoint): the adapter as the run saved it (PEFT's format, its tokenizer beside it), copied
// from the blob store into this worker's cache, over the run's base model; and what AdapterModels builds from it
// (merged, GGUF, ONNX, a GGUF LoRA). A run may save again under the same name: the cache is keyed by the save's time,
// so a newer save is fetched anew.
import path from 'node:path';
import type { Platform, TinkerCheckpointRow, TinkerRunRow } from '@ftp/platform';
import { tinkerCheckpointPrefix } from '@ftp/jobs/tinker';
import { downloadModel, ensureBaseModel, isFile, loggedStep, type ModelBuildOptions } from './base-models.ts';
import { AdapterModels } from './adapter-models.ts';
import { once, type BuildStep } from './build-progress.ts';

export class TinkerModels extends AdapterModels {
  constructor(
    platform: Platform,
    readonly run: TinkerRunRow,
    readonly saved: TinkerCheckpointRow,
    options: ModelBuildOptions = {},
  ) {
    super(platform, path.join(platform.config.dataDir, 'cache', 'tinker', run.run_id, `${saved.name}-${saved.created_at.getTime()}`), options);
  }

  /** Where a cloud export of these weights goes: beside the run's other files, so deleting the run deletes it. */
  get exportsPrefix(): string {
    return `${this.run.blob_prefix}exports/${this.saved.name}/`;
  }

  protected step(what: string, before?: () => Promise<unknown>): BuildStep {
    return { ...loggedStep(this.platform, what.replace('{job}', `the sampler weights ${this.saved.name} of training run ${this.run.run_id}`), { runId: this.run.run_id }), ...(before ? { before } : {}) };
  }

  base(): Promise<string> {
    return ensureBaseModel(this.platform, 'hub', this.run.base_model, this.options);
  }

  adapter(): Promise<string> {
    const folder = path.join(this.dir, 'adapter');
    return once(folder, () => isFile(path.join(folder, 'adapter_config.json')), () =>
      downloadModel(this.platform, tinkerCheckpointPrefix(this.run, 'sampler_weights', this.saved.name), folder),
    this.step('copying {job} to this worker'), this.options.progress);
  }
}
