// Which files a request's model is: a trained job's adapter (over its base) or merged model, or a base model
// from the model store or the hub; as transformers folders or, for the fast engine, GGUF files. Builds what is
// missing through JobModels (merge, GGUF conversion), cached on disk for the next request.
import type { BatchInferenceRequest } from '@ftp/schema';
import {
  invalidField,
  ServiceUnavailable,
  UnprocessableEntity,
  type JobSecretValues,
  type Platform,
  type TrainingJobRow,
} from '@ftp/platform';
import { baseModelFolder, baseModelGguf, JobModels, ModelBuildError } from '@ftp/worker';
import type { ModelFiles } from './engines.ts';

export type ModelChoice = Pick<BatchInferenceRequest, 'model_source' | 'job_id' | 'base_model_id' | 'use_fast_engine' | 'hub_token'>;

export interface ResolvedModel {
  files: ModelFiles;
  /** The trained job, unless model_source is base. */
  job?: TrainingJobRow;
  baseModelId: string;
}

export async function resolveModel(platform: Platform, userId: string, choice: ModelChoice, signal: AbortSignal): Promise<ResolvedModel> {
  const secrets: JobSecretValues = choice.hub_token ? { hubToken: choice.hub_token } : {};
  // Builds (download, merge, GGUF conversion) are not cancelled by the time limit: they are shared with other
  // requests and cached, so a model slower to build than INFERENCE_TIMEOUT_MS is still ready for a later call.
  const options = { secrets };
  const quantization = platform.config.FAST_ENGINE_QUANTIZATION;
  try {
    if (choice.model_source === 'base') {
      const baseModelId = choice.base_model_id!; // the schema requires it for base
      const folder = await baseModelFolder(platform, 'hub', baseModelId, options).catch((err: unknown) => {
        // The model store reports the training request's field; here the model is named by base_model_id.
        if (err instanceof UnprocessableEntity) throw invalidField(['body', 'base_model_id'], err.issues[0]!.msg, err.issues[0]!.type);
        throw err;
      });
      const files: ModelFiles = choice.use_fast_engine
        ? { engine: 'llama.cpp', gguf: await baseModelGguf(platform, folder, quantization, options) }
        : { engine: 'transformers', model: folder };
      return { files, baseModelId };
    }

    const job = await platform.jobs.getOwn(userId, choice.job_id!);
    if (choice.base_model_id !== undefined && choice.base_model_id !== job.base_model_id) {
      throw invalidField(
        ['body', 'base_model_id'],
        `base_model_id ${JSON.stringify(choice.base_model_id)} is not the base of job ${job.job_id} (${JSON.stringify(job.base_model_id)}); leave it out or send that`,
        'mismatch',
      );
    }
    const models = new JobModels(platform, job, options); // 409 unless the job completed
    let files: ModelFiles;
    if (choice.model_source === 'adapter') {
      files = choice.use_fast_engine
        ? { engine: 'llama.cpp', lora: await models.adapterGguf(), gguf: await models.baseGguf(quantization) }
        : { engine: 'transformers', adapter: await models.adapter(), model: await models.base() };
    } else {
      files = choice.use_fast_engine ? { engine: 'llama.cpp', gguf: await models.gguf(quantization) } : { engine: 'transformers', model: await models.merged() };
    }
    return { files, job, baseModelId: job.base_model_id };
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    if (err instanceof ModelBuildError) throw new ServiceUnavailable('ml core', `the model could not be prepared: ${err.message}`);
    if (err instanceof UnprocessableEntity && err.issues[0]?.loc[1] === 'training_config') {
      throw new ServiceUnavailable('model store', `the job's base model is not available: ${err.issues[0].msg}`);
    }
    throw err;
  }
}
