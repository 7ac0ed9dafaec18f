// The files of a Tinker run's sampler weights (`tinker:<run id>:<name>`, a model /v1 chat serves like a job's
// adapter): the adapter as the run saved it (PEFT's format, its tokenizer beside it), copied from the blob store
// into this worker's cache, over the run's base model; as GGUF for llama.cpp, converted here once. A run may save
// again under the same name: the cache is keyed by the save's time, so a newer save is fetched anew.
import path from 'node:path';
import type { Platform, TinkerCheckpointRow, TinkerRunRow } from '@ftp/platform';
import { tinkerCheckpointPrefix } from '@ftp/jobs/tinker';
import type { GgufQuantization } from '@ftp/schema';
import { adapterGgufIn, baseModelGguf, downloadModel, ensureBaseModel, isFile, loggedStep, type ModelBuildOptions } from './base-models.ts';
import { once } from './build-progress.ts';

export class TinkerModels {
  private readonly dir: string;

  constructor(
    private readonly platform: Platform,
    readonly run: TinkerRunRow,
    readonly saved: TinkerCheckpointRow,
    private readonly options: ModelBuildOptions = {},
  ) {
    this.dir = path.join(platform.config.dataDir, 'cache', 'tinker', run.run_id, `${saved.name}-${saved.created_at.getTime()}`);
  }

  private get name(): string {
    return this.saved.name;
  }

  base(): Promise<string> {
    return ensureBaseModel(this.platform, 'hub', this.run.base_model, this.options);
  }

  adapter(): Promise<string> {
    const folder = path.join(this.dir, 'adapter');
    return once(folder, () => isFile(path.join(folder, 'adapter_config.json')), () =>
      downloadModel(this.platform, tinkerCheckpointPrefix(this.run, 'sampler_weights', this.name), folder),
    loggedStep(this.platform, `copying the sampler weights ${this.name} of training run ${this.run.run_id} to this worker`, { runId: this.run.run_id }), this.options.progress);
  }

  adapterGguf(): Promise<string> {
    const step = loggedStep(this.platform, `converting the sampler weights ${this.name} of training run ${this.run.run_id} to a GGUF LoRA adapter for llama.cpp`, { runId: this.run.run_id });
    return adapterGgufIn(this.platform, this.dir, this, step, this.options);
  }

  async baseGguf(quantization: GgufQuantization): Promise<string> {
    return baseModelGguf(this.platform, await this.base(), quantization, this.options);
  }
}
