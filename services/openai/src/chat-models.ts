// Which model a /v1 model id names, as the infer queue's ModelChoice: a fine-tuned model (ft:<base>:<suffix>:<job id>,
// the caller's completed job), one of its checkpoints (…:ckpt-step-<n>), or a base model the store or hub has. The
// fast engine runs it (the adapter's GGUF over the base's, or the merged GGUF of a Full job), except vision models,
// which llama.cpp cannot run here: transformers. Unknown or another user's → 404 model_not_found, as OpenAI answers
// (asking the hub only for an owner/name id; a hub that cannot answer is a 503).
import { ModelNotFound, type Platform, type TrainingJobRow, UnprocessableEntity } from '@ftp/platform';
import { checkModelChoice, trainsWholeModel, type ModelChoice } from '@ftp/jobs';
import { checkpointModelName, fineTunedModelName, parseModelName } from './presenters.ts';

export interface ChatModel {
  choice: ModelChoice;
  job?: TrainingJobRow;
}

export async function resolveChatModel(platform: Platform, userId: string, model: string): Promise<ChatModel> {
  const named = parseModelName(model);
  if ('base' in named) {
    const choice: ModelChoice = { model_source: 'base', base_model_id: named.base, use_fast_engine: true };
    await checkModelChoice(platform, userId, choice).catch((err: unknown) => {
      if (err instanceof UnprocessableEntity) throw new ModelNotFound(model);
      throw err;
    });
    return { choice };
  }
  const job = await platform.jobs.get(userId, named.jobId);
  const expected = job && (named.step === undefined ? fineTunedModelName(job) : checkpointModelName(job, named.step));
  if (!job || expected !== model) throw new ModelNotFound(model);
  const choice: ModelChoice = {
    model_source: trainsWholeModel(job) ? 'merged' : 'adapter',
    job_id: job.job_id,
    ...(named.step !== undefined ? { checkpoint_step: named.step } : {}),
    use_fast_engine: job.modality === 'text',
  };
  await checkModelChoice(platform, userId, choice).catch((err: unknown) => {
    if (err instanceof UnprocessableEntity) throw new ModelNotFound(model); // a checkpoint that is not stored
    throw err;
  });
  return { choice, job };
}
