// Which model an inference, evaluation or export runs, checked against the rows: the caller's completed job, or a
// stored checkpoint of any of the caller's jobs or one another user shared with the caller (checkpoint permissions)
// (404 when it is not theirs, 409 before it completed or for the
// adapter of a Full job, 422 when base_model_id names another base or the checkpoint is not stored) or a base
// model the model store or hub has. The API checks before queueing; the worker checks again when it takes the
// work (the job may have been deleted meanwhile).
import { Conflict, invalidField, NotFound, type Platform, type TinkerCheckpointRow, type TinkerRunRow, type TrainingJobRow } from '@ftp/platform';
import { hasAdapter } from './job-files.ts';
import { locateBaseModel, type ModelLocation } from './model-store.ts';
import type { ModelChoice } from '../queues/index.ts';
import { jobConfig } from '@ftp/schema';

export interface CheckedModel {
  /** The trained job, unless model_source is base or the model is a Tinker run's. */
  job?: TrainingJobRow;
  /** A Tinker run’s sampler weights (choice.checkpoint_name, job_id the run’s id). */
  tinker?: { run: TinkerRunRow; saved: TinkerCheckpointRow };
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
  if (choice.checkpoint_name !== undefined) return checkTinkerWeights(platform, userId, choice);
  const job = await jobToRun(platform, userId, choice.job_id!, choice.checkpoint_step);
  if (choice.base_model_id !== undefined && choice.base_model_id !== job.base_model_id) {
    throw invalidField(
      ['body', 'base_model_id'],
      `base_model_id ${JSON.stringify(choice.base_model_id)} is not the base of job ${job.job_id} (${JSON.stringify(job.base_model_id)}); leave it out or send that`,
      'mismatch',
    );
  }
  if (choice.checkpoint_step === undefined && job.status !== 'completed') {
    throw new Conflict(`training job ${job.job_id} is ${job.status}; its model exists once it has completed (or name one of its checkpoints with checkpoint_step)`);
  }
  checkJobModel(job, choice.model_source === 'adapter');
  if (choice.checkpoint_step !== undefined) await checkCheckpoint(platform, job, choice.checkpoint_step);
  return { job, baseModelId: job.base_model_id };
}

/** Sampler weights a Tinker run saved (job_id the run's id): 404 for another user's run or an unknown run or name
 *  (the names it has, said), 422 for a base_model_id that is not the run's; llama.cpp cannot apply a LoRA on the
 *  output layer of a model whose output shares the embeddings (SmolLM2, the tests' tiny model), which the SDK's
 *  default train_unembed makes, so such an adapter on the fast engine is a 422 that says to merge or use transformers. */
async function checkTinkerWeights(platform: Platform, userId: string, choice: ModelChoice): Promise<CheckedModel> {
  const [runId, name] = [choice.job_id!, choice.checkpoint_name!];
  const run = await platform.tinker.getRun(userId, runId);
  if (!run) throw new NotFound('training run', runId);
  const saved = await platform.tinker.getCheckpoint(userId, runId, 'sampler_weights', name);
  if (!saved) {
    const names = (await platform.tinker.listCheckpoints(userId, runId)).filter((c) => c.kind === 'sampler_weights').map((c) => c.name);
    throw new NotFound('sampler weights', `tinker:${runId}:${name}`, names.length > 0 ? `the run saved ${names.join(', ')}` : 'the run has saved none: save_weights_for_sampler names them');
  }
  if (choice.base_model_id !== undefined && choice.base_model_id !== run.base_model) {
    throw invalidField(['body', 'base_model_id'], `base_model_id ${JSON.stringify(choice.base_model_id)} is not the base of training run ${runId} (${JSON.stringify(run.base_model)}); leave it out or send that`, 'mismatch');
  }
  if (choice.use_fast_engine && choice.model_source === 'adapter' && run.config.train_unembed) {
    throw invalidField(['body', 'use_fast_engine'], `tinker:${runId}:${name} adapts the output layer (train_unembed, the tinker SDK's default), which llama.cpp cannot apply as a LoRA here; send use_fast_engine false (transformers runs it) or model_source merged`);
  }
  return { baseModelId: run.base_model, tinker: { run, saved } };
}

/** The job whose model (or checkpoint `step`) `userId` runs or trains from: its own, or, for a checkpoint, another
 *  user's that granted it that checkpoint. 404 otherwise, the same for another user's as for none. */
export async function jobToRun(platform: Platform, userId: string, jobId: string, step: number | undefined): Promise<TrainingJobRow> {
  const job = step === undefined ? await platform.jobs.get(userId, jobId) : await platform.jobs.getForCheckpoint(userId, jobId, step);
  if (!job) throw new NotFound('training job', jobId);
  return job;
}

/** 409 for an adapter of a job that trained the whole model. */
export function checkJobModel(job: TrainingJobRow, wantsAdapter: boolean): void {
  if (wantsAdapter && trainsWholeModel(job)) {
    throw new Conflict(`training job ${job.job_id} trained the whole model (method Full); it has no adapter, use merged`);
  }
}

export const trainsWholeModel = (job: TrainingJobRow): boolean =>
  jobConfig(job).method === 'Full' || (job.status === 'completed' && !hasAdapter(job));

/** 422 at `loc` unless the job has stored checkpoint `step`; the message lists the ones it has. */
export async function checkCheckpoint(platform: Platform, job: TrainingJobRow, step: number, loc: string[] = ['body', 'checkpoint_step']): Promise<void> {
  const steps = (await platform.jobs.checkpoints(job.job_id)).map((c) => c.step);
  if (!steps.includes(step)) {
    const has = steps.length > 0 ? `its checkpoints are at steps ${steps.join(', ')}` : 'it has no stored checkpoint (save_strategy steps or epoch stores them)';
    throw invalidField(loc, `training job ${job.job_id} has no checkpoint at step ${step}; ${has}`, 'unknown_checkpoint');
  }
}
