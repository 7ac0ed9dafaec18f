// Which local files a request's model is on this worker: a trained job's adapter (over its base) or merged model,
// or a base model from the model store or the hub; as transformers folders or, for the fast engine, GGUF files.
// Builds what is missing through JobModels (download, merge, GGUF conversion), cached on disk for the next request;
// `progress` is told what each build does while the request waits for it.
import { ServiceUnavailable, UnprocessableEntity, type JobSecretValues, type Platform } from '@ftp/platform';
import { checkModelChoice, type CheckedModel, type ModelChoice } from '@ftp/jobs';
import { baseModelFolder, baseModelGguf, ModelBuildError } from '../models/base-models.ts';
import type { ProgressListener } from '../models/build-progress.ts';
import { JobModels } from '../models/job-models.ts';
import type { ModelFiles } from './engines.ts';

export interface ResolvedModel extends CheckedModel {
  files: ModelFiles;
}

export async function resolveModel(
  platform: Platform,
  userId: string,
  choice: ModelChoice,
  secrets: JobSecretValues | undefined,
  signal: AbortSignal,
  progress?: ProgressListener,
): Promise<ResolvedModel> {
  // Builds (download, merge, GGUF conversion) are not cancelled by the time limit: they are shared with other
  // requests and cached, so a model slower to build than INFERENCE_TIMEOUT_MS is still ready for a later call.
  const options = { ...(secrets ? { secrets } : {}), ...(progress ? { progress } : {}) };
  const quantization = platform.config.FAST_ENGINE_QUANTIZATION;
  try {
    const checked = await checkModelChoice(platform, userId, choice, secrets?.hubToken);
    if (checked.base) {
      const folder = await baseModelFolder(platform, checked.base, options);
      const files: ModelFiles = choice.use_fast_engine
        ? { engine: 'llama.cpp', gguf: await baseModelGguf(platform, folder, quantization, options) }
        : { engine: 'transformers', model: folder };
      return { ...checked, files };
    }
    const models = new JobModels(platform, checked.job!, options, choice.checkpoint_step);
    let files: ModelFiles;
    if (choice.model_source === 'adapter') {
      files = choice.use_fast_engine
        ? { engine: 'llama.cpp', lora: await models.adapterGguf(), gguf: await models.baseGguf(quantization) }
        : { engine: 'transformers', adapter: await models.adapter(), model: await models.base() };
    } else {
      files = choice.use_fast_engine ? { engine: 'llama.cpp', gguf: await models.gguf(quantization) } : { engine: 'transformers', model: await models.merged() };
    }
    return { ...checked, files };
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    if (err instanceof ModelBuildError) throw new ServiceUnavailable('ml core', `the model could not be prepared: ${err.message}`);
    if (err instanceof UnprocessableEntity && err.issues[0]?.loc[1] === 'training_config') {
      throw new ServiceUnavailable('model store', `the job's base model is not available: ${err.issues[0].msg}`);
    }
    throw err;
  }
}
