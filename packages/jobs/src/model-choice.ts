// Which model an inference or evaluation request runs, checked against the rows: the caller's completed job
// (404 when it is not theirs, 409 before it completed or for the adapter of a Full job, 422 when base_model_id
// names another base) or a base model the model store or hub has. The API checks before queueing; the worker
// checks again when it takes the work (the job may have been deleted meanwhile).
import { Conflict, invalidField, type Platform, type TrainingJobRow } from '@ftp/platform';
import { hasAdapter } from './job-files.ts';
import { locateBaseModel, type ModelLocation } from './model-store.ts';
import type { ModelChoice } from './queues.ts';

export interface CheckedModel {
  /** The trained job, unless model_source is base. */
  job?: TrainingJobRow;
  baseModelId: string;
  /** Where the base model is (model_source base only). */
  base?: ModelLocation;
}

export async function checkModelChoice(platform: Platform, userId: string, choice: ModelChoice, hubToken?: string): Promise<CheckedModel> {
  if (choice.model_source === 'base') {
    const baseModelId = choice.base_model_id!; // the request schema requires it for base
    const base = await locateBaseModel(platform, 'hub', baseModelId, { hubToken, loc: ['body', 'base_model_id'] });
    return { baseModelId, base };
  }
  const job = await platform.jobs.getOwn(userId, choice.job_id!);
  if (choice.base_model_id !== undefined && choice.base_model_id !== job.base_model_id) {
    throw invalidField(
      ['body', 'base_model_id'],
      `base_model_id ${JSON.stringify(choice.base_model_id)} is not the base of job ${job.job_id} (${JSON.stringify(job.base_model_id)}); leave it out or send that`,
      'mismatch',
    );
  }
  if (job.status !== 'completed') throw new Conflict(`training job ${job.job_id} is ${job.status}; its model exists once it has completed`);
  if (choice.model_source === 'adapter' && !hasAdapter(job)) {
    const method = (job.training_config as { method?: string }).method;
    throw new Conflict(`training job ${job.job_id} trained the whole model (method ${method}); it has no adapter, use merged`);
  }
  return { job, baseModelId: job.base_model_id };
}
