// Which local files a request's model is on this worker: a trained job's adapter (over its base) or merged model,
// or a base model from the model store or the hub; as transformers folders or, for the fast engine, GGUF files.
// Builds what is missing through JobModels (download, merge, GGUF conversion), cached on disk for the next request;
// `progress` is told what each build does while the request waits for it.
import { ServiceUnavailable, UnprocessableEntity, type JobSecretValues, type Platform } from '@ftp/platform';
import { checkModelChoice, type CheckedModel } from '@ftp/jobs/models';
import type { ModelChoice } from '@ftp/jobs/queues';
import { baseModelFolder, baseModelGguf, ModelBuildError } from '../models/base-models.ts';
import type { ProgressListener } from '../models/build-progress.ts';
import { JobModels } from '../models/job-models.ts';
import { TinkerModels } from '../models/tinker-models.ts';
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
    const models = checked.tinker ? new TinkerModels(platform, checked.tinker.run, checked.tinker.saved, options) : new JobModels(platform, checked.job!, options, choice.checkpoint_step);
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

/** Who hears what a request waits for on its model's first use (an engine starting, the model loading: tens of seconds
 *  on a CPU): `relay` (a streamed chat's ': preparing' lines) and, when the model is a job's, the job's event log, where
 *  `ftune eval`, `ftune jobs logs` and the console read it while the answer is not there yet (#39). Builds tell the job
 *  themselves (build-progress.ts); this is for the engines' news only. `what` names the request: "an evaluation". */
export function engineNews(platform: Platform, model: CheckedModel, what: string, relay?: (message: string) => void): ((message: string) => void) | undefined {
  const jobId = model.job?.job_id;
  if (!jobId) return relay;
  return (message) => {
    relay?.(message);
    platform.jobs
      .appendEvent(jobId, 'log', { level: 'info', message: `${what} waits: ${message}`, about: 'model' })
      .catch((err: unknown) => platform.logger.warn({ err, jobId }, 'what a request waits for could not be added to its job\'s log'));
  };
}
