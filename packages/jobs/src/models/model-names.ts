// The names models go by on /v1 and wherever a grader names its judge: a fine-tuned model ft:<base>:<suffix or
// custom>:<job id>, one of its checkpoints …:ckpt-step-<n> (another user's too, when it shared that checkpoint with
// the caller), or a base model the store or hub has; and which model such
// a name gives a user, as the infer queue's ModelChoice. The fast engine runs it (the adapter's GGUF over the base's,
// or the merged GGUF of a Full job), except vision models, which llama.cpp cannot run here: transformers. Unknown or
// another user's → ModelNotFound (OpenAI's 404 model_not_found; the hub is asked only for an owner/name id).
import { invalidField, ModelNotFound, NotFound, type Platform, type TrainingJobRow, UnprocessableEntity } from '@ftp/platform';
import { checkModelChoice, trainsWholeModel } from './model-choice.ts';
import type { ModelChoice } from '../queues/index.ts';

const CHECKPOINT = /^(ft:.+:[^:]+:([^:]+)):ckpt-step-(\d+)$/;
/** Sampler weights a Tinker run saved: tinker:<run id>:<name> (services/tinker). */
const TINKER = /^tinker:(job_[0-9a-f]+):([A-Za-z0-9][A-Za-z0-9._-]*)$/;
const FINE_TUNED = /^ft:.+:[^:]+:([^:]+)$/;

/** The model a fine-tuned job made: ft:<base>:<suffix, or custom>:<job id>. */
export function fineTunedModelName(job: TrainingJobRow): string {
  const suffix = (job.openai as { suffix?: string | null } | null)?.suffix ?? 'custom';
  return `ft:${job.base_model_id}:${suffix}:${job.job_id}`;
}

export const checkpointModelName = (job: TrainingJobRow, step: number): string => `${fineTunedModelName(job)}:ckpt-step-${step}`;

/** What a model id names: a checkpoint or a fine-tuned model (by job id; the caller checks the whole name against
 *  the job), or else a base model. */
export function parseModelName(model: string): { jobId: string; step?: number } | { base: string } {
  const checkpoint = CHECKPOINT.exec(model);
  if (checkpoint) return { jobId: checkpoint[2]!, step: Number(checkpoint[3]) };
  const tuned = FINE_TUNED.exec(model);
  if (tuned) return { jobId: tuned[1]! };
  return { base: model };
}

export interface NamedModel {
  choice: ModelChoice;
  job?: TrainingJobRow;
}

/** The model `model` names for `userId`, or ModelNotFound; on the engine asked for (`fast`: llama.cpp), or else its
 *  own (llama.cpp for text; transformers for vision, which asking for llama.cpp is a 400 of). */
export async function resolveModelName(platform: Platform, userId: string, model: string, fast?: boolean): Promise<NamedModel> {
  const tinker = TINKER.exec(model);
  if (tinker) {
    const choice: ModelChoice = { model_source: 'adapter', job_id: tinker[1]!, checkpoint_name: tinker[2]!, use_fast_engine: fast ?? false };
    const checked = await checkModelChoice(platform, userId, choice).catch((err: unknown) => {
      if (err instanceof NotFound) throw new ModelNotFound(model);
      throw err;
    });
    // llama.cpp applies the adapter unless it adapts the output layer (checkModelChoice refuses that asked for).
    return { choice: { ...choice, use_fast_engine: fast ?? !checked.tinker!.run.config.train_unembed } };
  }
  const named = parseModelName(model);
  if ('base' in named) {
    const choice: ModelChoice = { model_source: 'base', base_model_id: named.base, use_fast_engine: fast ?? true };
    await checkModelChoice(platform, userId, choice).catch((err: unknown) => {
      if (err instanceof UnprocessableEntity) throw new ModelNotFound(model);
      throw err;
    });
    return { choice };
  }
  const job = named.step === undefined ? await platform.jobs.get(userId, named.jobId) : await platform.jobs.getForCheckpoint(userId, named.jobId, named.step);
  const expected = job && (named.step === undefined ? fineTunedModelName(job) : checkpointModelName(job, named.step));
  if (!job || expected !== model) throw new ModelNotFound(model);
  if (fast && job.modality !== 'text') throw invalidField(['body', 'use_fast_engine'], `${model} is a ${job.modality} model, which llama.cpp does not run here; leave use_fast_engine out or send false`);
  const choice: ModelChoice = {
    model_source: trainsWholeModel(job) ? 'merged' : 'adapter',
    job_id: job.job_id,
    ...(named.step !== undefined ? { checkpoint_step: named.step } : {}),
    use_fast_engine: fast ?? job.modality === 'text',
  };
  await checkModelChoice(platform, userId, choice).catch((err: unknown) => {
    if (err instanceof UnprocessableEntity) throw new ModelNotFound(model); // a checkpoint that is not stored
    throw err;
  });
  return { choice, job };
}
