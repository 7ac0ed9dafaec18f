// What is built from a trained adapter over its base, the same for a job's models and a Tinker run's sampler weights:
// the merged model (merged here), its GGUF (converted here), its ONNX export with transformers' reference tokens, the
// adapter as a GGUF LoRA file and the base as GGUF. Each build is cached in the model's own folder, shared by
// concurrent asks (once) and told as it runs (step). JobModels adds what training stored (a merged model, a GGUF)
// and the Full jobs that have no adapter.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { OnnxExtraVariant, Platform } from '@ftp/platform';
import { ggufFileName, onnxFolderName } from '@ftp/jobs/models';
import { ONNX_EXTRA_VARIANTS, type GgufQuantization } from '@ftp/schema';
import { ONNX_CHECK_PROMPTS } from '../export/onnx-verify.ts';
import { adapterGgufIn, baseModelGguf, isFile, runCoreStep, type ModelBuildOptions } from './base-models.ts';
import { buildFolder } from './blob-folders.ts';
import { once, type BuildStep } from './build-progress.ts';

export abstract class AdapterModels {
  constructor(
    protected readonly platform: Platform,
    /** This model's cache folder on this worker. */
    protected readonly dir: string,
    protected readonly options: ModelBuildOptions = {},
  ) {}

  /** The base model's folder. */
  abstract base(): Promise<string>;
  /** The adapter folder (PEFT's format). */
  abstract adapter(): Promise<string>;
  /** A build of this model, told where this model's news goes; `{job}` in `what` names the model. */
  protected abstract step(what: string, before?: () => Promise<unknown>): BuildStep;

  /** The whole fine-tuned model: the adapter merged into its base here. */
  merged(): Promise<string> {
    const folder = path.join(this.dir, 'merged');
    return once(folder, () => isFile(path.join(folder, 'config.json')), () => this.mergeInto(folder),
      this.step('merging the adapter of {job} into its base model', async () => [await this.base(), await this.adapter()]), this.options.progress);
  }

  protected async mergeInto(folder: string): Promise<void> {
    const [base, adapter] = [await this.base(), await this.adapter()];
    await buildFolder(folder, (temp) =>
      runCoreStep(this.platform, 'merge', { base_model: base, adapter, output_dir: temp }, path.join(this.dir, 'merge.json'), this.options));
  }

  /** The GGUF training stored for this model, downloaded into `folder` when there is one (a job's own). */
  protected storedGguf(_name: string, _folder: string): Promise<boolean> {
    return Promise.resolve(false);
  }

  /** Whether training stored this GGUF, without fetching it. */
  protected hasStoredGguf(_name: string): Promise<boolean> {
    return Promise.resolve(false);
  }

  /** The merged model as GGUF (with its Ollama Modelfile beside it): the one training stored, or converted here.
   *  One folder per quantization, since the Modelfile names its own .gguf file. */
  gguf(quantization: GgufQuantization): Promise<string> {
    const name = ggufFileName(quantization);
    const folder = path.join(this.dir, `gguf-${quantization}`);
    const file = path.join(folder, name);
    return once(file, () => isFile(file), async () => {
      if (await this.storedGguf(name, folder)) return;
      const merged = await this.merged();
      await buildFolder(folder, (temp) =>
        runCoreStep(this.platform, 'gguf', { model: merged, output_file: path.join(temp, name), quantization }, path.join(this.dir, `gguf-${quantization}.json`), this.options));
    }, this.step(`making the GGUF (${quantization}) of {job} for llama.cpp`, async () => (await this.hasStoredGguf(name)) || this.merged()), this.options.progress);
  }

  /** The merged model in transformers.js's layout (`<folder>/model`: onnx/ with fp32 and the `variants` asked, config,
   *  tokenizer, chat template) and beside it transformers' greedy tokens for the check prompts
   *  (`<folder>/reference.json`), which the export verifies the ONNX models against. One folder per set of variants
   *  (`onnx` for all three, as before there was a choice). */
  async onnx(variants: readonly OnnxExtraVariant[] = ONNX_EXTRA_VARIANTS): Promise<{ model: string; reference: string }> {
    const asked = ONNX_EXTRA_VARIANTS.filter((v) => variants.includes(v));
    const folder = path.join(this.dir, onnxFolderName(asked));
    const paths = { model: path.join(folder, 'model'), reference: path.join(folder, 'reference.json') };
    await once(paths.reference, () => isFile(paths.reference), async () => {
      const merged = await this.merged();
      await buildFolder(folder, async (temp) => {
        await fs.mkdir(temp, { recursive: true });
        await fs.writeFile(path.join(temp, 'prompts.json'), JSON.stringify(ONNX_CHECK_PROMPTS));
        await runCoreStep(this.platform, 'onnx', {
          model: merged, output_dir: path.join(temp, 'model'), variants: asked, prompts_file: path.join(temp, 'prompts.json'), reference_file: path.join(temp, 'reference.json'),
        }, path.join(this.dir, `${onnxFolderName(asked)}.json`), this.options);
      });
    }, this.step(`exporting {job} to ONNX (${['fp32', ...asked].join(', ')}) for ONNX Runtime and transformers.js`, () => this.merged()), this.options.progress);
    return paths;
  }

  /** The LoRA adapter as a GGUF LoRA file, for llama.cpp to apply over the base model's GGUF. */
  adapterGguf(): Promise<string> {
    const step = this.step('converting the adapter of {job} to a GGUF LoRA adapter for llama.cpp', async () => [await this.base(), await this.adapter()]);
    return adapterGgufIn(this.platform, this.dir, this, step, this.options);
  }

  /** The base model as GGUF (what a GGUF LoRA adapter applies over). */
  async baseGguf(quantization: GgufQuantization): Promise<string> {
    return baseModelGguf(this.platform, await this.base(), quantization, this.options);
  }
}
