// POST /train as a domain function: everything that can be checked before a worker spends time on the
// job is checked here (dataset ownership, trainer vs processing mode, QLoRA vs CUDA, the base model and whether its
// template writes the dataset's tools, the test split for evaluation, reward columns), then a worker's warm core
// counts the data as training will when it can within SUBMIT_CHECK_MS (#56), then the row is written and the job
// queued; or, with dry_run, a worker makes the pre-flight report and nothing is written.
import { invalidField, newId, ServiceUnavailable, UnprocessableEntity, userKeySegment, type NewJobRow, type Platform, type TrainingJobRow, type ValidationIssue } from '@ftp/platform';
import { DEFAULT_MAX_LENGTH, graderItemFields, TRAINER_DATASET_MODE, type PreflightReport, type TrainRequest } from '@ftp/schema';
import { checkJudges } from './grading.ts';
import { checkCheckpoint, checkToolTemplate, datasetUsesTools, jobToRun, locateBaseModel, modelContextLength, trainsWholeModel, type ModelLocation } from '../models/index.ts';
import { preflightQueue, requestFromWorker, trainingQueue, type PreflightPayload } from '../queues/index.ts';
import { readyDataset } from './datasets.ts';

const CONFIG_LOC = ['body', 'training_config'];

/** The job's secrets are cut out of the stored config; they reach the worker sealed (platform.secrets). */
function storableConfig(config: TrainRequest['training_config']): Record<string, unknown> {
  const tracker = config.tracker_config ? { ...config.tracker_config, api_key: undefined } : undefined;
  return JSON.parse(JSON.stringify({ ...config, tracker_config: tracker })) as Record<string, unknown>;
}

export function jobPageUrl(platform: Platform, jobId: string): string {
  return `http://${platform.config.HOST}:${platform.config.TRAINING_PORT}/jobs/${jobId}/dashboard`;
}

interface CheckedTrainRequest {
  /** The request's training_config with what depends on the base model filled in (max_length). */
  config: TrainRequest['training_config'];
  /** training_config.from_job's job. */
  parent?: TrainingJobRow | undefined;
  /** Where the base model is. */
  location: ModelLocation;
}

/** Everything a submit checks, for a job and a dry run alike. */
async function checkTrainRequest(platform: Platform, userId: string, request: TrainRequest): Promise<CheckedTrainRequest> {
  const config = request.training_config;
  const dataset = await readyDataset(platform, userId, request.processed_dataset_id);

  const issues: ValidationIssue[] = [];
  const needed = TRAINER_DATASET_MODE[config.trainer_type];
  if (dataset.processing_mode !== needed) {
    issues.push({
      loc: [...CONFIG_LOC, 'trainer_type'],
      msg: `trainer_type ${config.trainer_type} needs a dataset processed with processing_mode ${needed}; ${request.processed_dataset_id} was processed as ${dataset.processing_mode}`,
      type: 'value_error',
    });
  }
  if (config.modality !== dataset.modality) {
    issues.push({ loc: [...CONFIG_LOC, 'modality'], msg: `the dataset's modality is ${dataset.modality}; set modality to ${dataset.modality}`, type: 'value_error' });
  }
  if (config.modality === 'vision' && config.trainer_type !== 'sft') {
    issues.push({ loc: [...CONFIG_LOC, 'trainer_type'], msg: 'modality vision trains with trainer_type sft only (LoRA or Full); use sft, or a text dataset', type: 'value_error' });
  }
  if (config.modality === 'vision' && config.export_config.include_gguf) {
    issues.push({ loc: [...CONFIG_LOC, 'export_config', 'include_gguf'], msg: 'GGUF export covers text models only (a vision model needs its image encoder as a separate llama.cpp mmproj file, which this version does not write); set include_gguf to false', type: 'value_error' });
  }
  if (config.method === 'QLoRA' && !(await platform.workers.anyLiveWithCuda(platform.config.WORKER_TIMEOUT_S))) {
    issues.push({ loc: [...CONFIG_LOC, 'method'], msg: 'QLoRA needs a CUDA GPU and no worker has one; use LoRA', type: 'value_error' });
  }
  const hasTest = dataset.splits.some((s) => s.split_name === 'test');
  if (config.eval_config.eval_strategy !== 'no' && !hasTest) {
    issues.push({
      loc: [...CONFIG_LOC, 'eval_config', 'eval_strategy'],
      msg: `eval_strategy ${config.eval_config.eval_strategy} needs a test split; process the dataset with a manual_split or hub_split, or set eval_strategy to no`,
      type: 'value_error',
    });
  }
  const tracker = config.tracker_config?.provider;
  if (tracker === 'wandb') {
    issues.push({
      loc: [...CONFIG_LOC, 'tracker_config', 'provider'],
      msg: 'the wandb tracker is not available in this version; use mlflow (with MLFLOW_TRACKING_URI set) or leave provider out',
      type: 'not_available',
    });
  } else if (tracker === 'mlflow' && !platform.config.MLFLOW_TRACKING_URI) {
    issues.push({
      loc: [...CONFIG_LOC, 'tracker_config', 'provider'],
      msg: 'the mlflow tracker needs MLFLOW_TRACKING_URI set on the server; leave provider out to use the job page',
      type: 'value_error',
    });
  }
  if (config.trainer_type === 'grpo') {
    (config.reward_config ?? []).forEach((reward, index) => {
      // What it reads of each training line: its reference_field, or the {{item.<field>}} of its templates.
      for (const column of graderItemFields(reward)) {
        if (dataset.columns.includes(column)) continue;
        const field = 'reference_field' in reward && reward.reference_field === column ? 'reference_field' : 'reference';
        issues.push({
          loc: [...CONFIG_LOC, 'reward_config', String(index), reward.type === 'multi' ? 'graders' : field],
          msg: `column ${JSON.stringify(column)} is not in the dataset; its columns are: ${dataset.columns.join(', ')}`,
          type: 'unknown_column',
        });
      }
    });
  }
  if (config.trainer_type === 'grpo') await checkJudges(platform, userId, config.reward_config ?? []);
  if (config.eval_config.graders) await checkJudges(platform, userId, config.eval_config.graders);
  const parent = config.from_job ? await checkParent(platform, userId, config, issues) : undefined;
  if (issues.length > 0) throw new UnprocessableEntity(issues);
  if (config.export_config.destination === 'hub' && !request.hub_token) {
    throw invalidField(['body', 'hub_token'], 'hub_token is required when export_config.destination is hub (it is used for the upload and never stored)', 'missing');
  }
  const location = await locateBaseModel(platform, config.provider, config.base_model_id, { hubToken: request.hub_token });
  if (datasetUsesTools(dataset)) await checkToolTemplate(platform, location, config.base_model_id, [...CONFIG_LOC, 'base_model_id']);
  const maxLength = fitContext(config, await modelContextLength(platform, location));
  return { parent, location, config: { ...config, hyperparameters: { ...config.hyperparameters, max_length: maxLength } } };
}

/** max_length as the job will use it: the one asked for, which must fit the base model's context (known before any
 *  download for a model in the store or a folder; a hub model not fetched yet is checked by the core), or by default
 *  DEFAULT_MAX_LENGTH cut to that context, so that leaving it out works with every model. */
function fitContext(config: TrainRequest['training_config'], context: number | undefined): number {
  const asked = config.hyperparameters.max_length;
  if (asked === undefined) return Math.min(DEFAULT_MAX_LENGTH, context ?? DEFAULT_MAX_LENGTH);
  if (context !== undefined && asked > context) {
    throw new UnprocessableEntity([{
      loc: [...CONFIG_LOC, 'hyperparameters', 'max_length'],
      msg: `max_length ${asked} exceeds the context of base model ${JSON.stringify(config.base_model_id)} (${context} tokens); set max_length to ${context} or less`,
      type: 'too_big',
    }]);
  }
  return asked;
}

/** What the /v1 face adds to a job it creates: its id (chosen before its files were read), what only that face shows,
 *  and the log of its file validation; a sweep's trial: its id (chosen before it was submitted) and the sweep's. */
export type JobExtras = Partial<Pick<NewJobRow, 'job_id' | 'openai' | 'earlier' | 'sweep_id'>>;

export async function submitTrainingJob(platform: Platform, userId: string, request: TrainRequest, extras: JobExtras = {}): Promise<string> {
  const checked = await checkTrainRequest(platform, userId, request);
  const { config, parent } = checked;
  // A sweep's trial is not checked here: its sweep dry-ran the largest trial, and a trial its core refuses is a
  // failed trial of the study, not a refused sweep.
  const preflight = extras.sweep_id ? undefined : await checkOnWorker(platform, userId, request, checked);
  const jobId = extras.job_id ?? newId('job');
  await platform.jobs.insert({
    ...extras,
    ...(preflight ? { preflight: preflight as unknown as Record<string, unknown> } : {}),
    job_id: jobId,
    user_id: userId,
    job_name: request.job_name,
    processed_dataset_id: request.processed_dataset_id,
    base_model_id: config.base_model_id,
    modality: config.modality,
    training_config: storableConfig(config),
    blob_prefix: `jobs/${userKeySegment(userId)}/${jobId}/`,
    tracker_url: jobPageUrl(platform, jobId),
    parent_job_id: parent?.job_id ?? null,
    parent_checkpoint_step: config.from_checkpoint_step ?? null,
  });
  await platform.secrets.put(jobId, { hubToken: request.hub_token, trackerApiKey: config.tracker_config?.api_key });
  try {
    await platform.queue.add(trainingQueue, { jobId });
  } catch (err) {
    // Told 503, the client submits again: this row must not run later as well (the reconciler queues rows that wait).
    await platform.secrets.drop(jobId);
    await platform.jobs.update(jobId, { status: 'failed', error: 'the job queue was not available when the job was submitted; submit it again', finished_at: new Date() }, ['queued']);
    throw err;
  }
  return jobId;
}

/** The submit's check (#56): a job the core would refuse once a worker takes it (every row cut before its answer by
 *  max_length, a chat template that cannot write its rows) is refused now, with the core's 422, when a worker's warm
 *  core answers within SUBMIT_CHECK_MS: the pre-flight report without the throughput probe and the sampled warnings,
 *  about a second on a laptop, stored with the job so that it shows while the job waits. Not checked here, and the
 *  job's own pre-flight (before its model loads) stays the check: no live worker serves the preflight lane, no
 *  answer in time, a hub model no worker has fetched yet (a check downloads no weights), or QLoRA (the worker that
 *  answers may have no CUDA, which the core refuses). */
async function checkOnWorker(platform: Platform, userId: string, request: TrainRequest, { config, location }: CheckedTrainRequest): Promise<PreflightReport | undefined> {
  const ms = platform.config.SUBMIT_CHECK_MS;
  if (ms === 0 || location.kind === 'hub' || config.method === 'QLoRA') return undefined;
  const payload: PreflightPayload = { userId, processed_dataset_id: request.processed_dataset_id, training_config: storableConfig(config), check: true };
  const limit = { ms, setting: 'SUBMIT_CHECK_MS', fix: "the job's own pre-flight checks it" };
  try {
    return await requestFromWorker(platform, preflightQueue, payload, request.hub_token, "the submit's check of the data", { limit });
  } catch (err) {
    if (err instanceof UnprocessableEntity) throw err;
    // No live worker serves the lane (requestFromWorker looked before queueing anything): nothing to say per submit.
    if (err instanceof ServiceUnavailable && err.dependency === 'worker') return undefined;
    platform.logger.info({ err: (err as Error).message }, "a submit's check of its data did not answer; the job is queued and its own pre-flight checks it");
    return undefined;
  }
}

/** dry_run: the same checks, then a worker renders and counts the data as training would, checks the spec as the
 *  core does (its refusals are 422s here) and estimates time and memory; nothing is stored. */
export async function preflightTrainingJob(platform: Platform, userId: string, request: TrainRequest): Promise<PreflightReport> {
  const { config } = await checkTrainRequest(platform, userId, request);
  const payload: PreflightPayload = { userId, processed_dataset_id: request.processed_dataset_id, training_config: storableConfig(config) };
  const limit = { ms: platform.config.PREFLIGHT_TIMEOUT_MS, setting: 'PREFLIGHT_TIMEOUT_MS', fix: 'raise the limit, or try again once the worker has the base model cached' };
  return requestFromWorker(platform, preflightQueue, payload, request.hub_token, 'the dry run', { limit });
}

/** training_config.from_job: the caller's job, or a checkpoint another user shared with the caller (404 otherwise), on the same base, completed or with the checkpoint
 *  named, and of a kind this job can go on from (an adapter for LoRA/QLoRA; anything for Full, which starts from
 *  the parent's whole model). Problems are added to `issues`. */
async function checkParent(platform: Platform, userId: string, config: TrainRequest['training_config'], issues: ValidationIssue[]): Promise<TrainingJobRow> {
  const parent = await jobToRun(platform, userId, config.from_job!, config.from_checkpoint_step);
  const loc = [...CONFIG_LOC, 'from_job'];
  if (parent.base_model_id !== config.base_model_id) {
    issues.push({ loc, msg: `job ${parent.job_id} was trained on base ${JSON.stringify(parent.base_model_id)}, not ${JSON.stringify(config.base_model_id)}; continue it with that base_model_id`, type: 'mismatch' });
  }
  if (config.method !== 'Full' && trainsWholeModel(parent)) {
    issues.push({ loc, msg: `job ${parent.job_id} trained the whole model (method Full); continue it with method Full`, type: 'mismatch' });
  }
  if (config.from_checkpoint_step !== undefined) {
    await checkCheckpoint(platform, parent, config.from_checkpoint_step, [...CONFIG_LOC, 'from_checkpoint_step']).catch((err: UnprocessableEntity) => issues.push(...err.issues));
  } else if (parent.status !== 'completed') {
    issues.push({ loc, msg: `job ${parent.job_id} is ${parent.status}; continue from a completed job, or name one of its checkpoints with from_checkpoint_step`, type: 'value_error' });
  }
  return parent;
}
