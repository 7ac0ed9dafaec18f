// POST /v1/fine_tuning/jobs as a domain function: OpenAI's job request becomes a training job here. The files are
// read line by line as OpenAI validates them; the good lines become a processed dataset (train, and test from the
// validation file) and the job is submitted as POST /train would be (the same checks). A bad line leaves a failed job
// with no processed dataset and nothing else behind. "auto" hyperparameters are resolved from the dataset size by the
// rules below (README, "Coming from OpenAI fine-tuning"), and the values used are what the job shows.
import { randomInt } from 'node:crypto';
import { writeProcessedDataset } from '@ftp/datasets';
import { newId, NotFound, UnprocessableEntity, userKeySegment, type Platform, type RawDatasetRow } from '@ftp/platform';
import { TRAINER_DATASET_MODE, TrainingConfig, type CreateFineTuningJobRequest, type Grader, type SampleResponseFormat, type TrainRequest } from '@ftp/schema';
import { checkJudges, jobPageUrl, submitTrainingJob } from '@ftp/jobs/training';
import { locateBaseModel, modelContextLength, parseModelName, resolveModelName } from '@ftp/jobs/models';
import { grpoHyperparameters, resolveReinforcement, rewardOf, type ReinforcementFacts } from './reinforcement.ts';
import { InvalidLine, readTrainingFile, type FileKind } from './training-files.ts';

/** What a /v1 job keeps besides the training job (training_jobs.openai). */
export interface OpenAiJobFacts {
  training_file: string;
  validation_file: string | null;
  suffix: string | null;
  seed: number;
  metadata: Record<string, string> | null;
  method: 'supervised' | 'dpo' | 'reinforcement';
  hyperparameters: ResolvedHyperparameters;
  /** A reinforcement job's grader, its settings ("auto" resolved) and the JSON Schema its answers follow. */
  reinforcement?: { grader: Grader; response_format?: SampleResponseFormat } & ReinforcementFacts;
  /** Why the job failed before it was queued (its files), as OpenAI reports it. */
  error?: { code: string; param: string };
  /** The fine-tuned model (or checkpoint) it continues, as the request named it; absent for a base model. */
  model?: string;
}

export interface ResolvedHyperparameters {
  n_epochs: number;
  batch_size: number;
  learning_rate_multiplier: number;
  beta?: number;
}

const TRAINERS = { supervised: 'sft', dpo: 'dpo', reinforcement: 'grpo' } as const;

/** The learning rate a multiplier of 1 means: PEFT's usual LoRA rate (every /v1 job trains a LoRA adapter). */
export const BASE_LEARNING_RATE = 2e-4;
/** Tokens kept per example: the model's context, up to this (longer examples are cut, as the pre-flight reports). */
const MAX_EXAMPLE_TOKENS = 4096;
/** Examples per device step; a larger batch_size is reached by gradient accumulation. */
const MAX_DEVICE_BATCH = 8;

/**
 * "auto", as OpenAI's published data-preparation guide sizes it: 3 epochs, raised so that the run sees at least
 * 100 examples (at most 25 epochs) and lowered so that it sees at most 25 000 (at least 1); batch size ~0.2% of the
 * examples, 1 to 32; learning_rate_multiplier 1 (= 2e-4); beta 0.1.
 */
export function resolveHyperparameters(requested: CreateFineTuningJobRequest['hyperparameters'] = {}, examples: number, method: OpenAiJobFacts['method']): ResolvedHyperparameters {
  const value = <T>(v: T | 'auto' | undefined, auto: T): T => (v === undefined || v === 'auto' ? auto : v);
  let epochs = 3;
  if (examples * epochs < 100) epochs = Math.min(25, Math.ceil(100 / Math.max(1, examples)));
  else if (examples * epochs > 25_000) epochs = Math.max(1, Math.floor(25_000 / examples));
  const resolved: ResolvedHyperparameters = {
    n_epochs: value(requested.n_epochs, epochs),
    batch_size: value(requested.batch_size, Math.min(32, Math.max(1, Math.ceil(examples * 0.002)))),
    learning_rate_multiplier: value(requested.learning_rate_multiplier, 1),
  };
  if (method === 'dpo') resolved.beta = value(requested.beta, 0.1);
  return resolved;
}

/** batch_size as device batch × accumulation: the largest device batch up to 8 that divides it. */
function deviceBatch(batchSize: number): { batch_size: number; gradient_accumulation_steps: number } {
  let device = Math.min(MAX_DEVICE_BATCH, batchSize);
  while (batchSize % device !== 0) device -= 1;
  return { batch_size: device, gradient_accumulation_steps: batchSize / device };
}

async function ownFile(platform: Platform, userId: string, fileId: string, param: string): Promise<RawDatasetRow> {
  const file = await platform.datasets.getRaw(userId, fileId);
  // Another user's file is a 404 like every other id of theirs (decisions.md), and says no more than an unknown one.
  if (!file) throw new NotFound(`${param} file`, fileId, 'upload it with POST /v1/files (a file is its owner’s only)');
  return file;
}

export async function createFineTuningJob(platform: Platform, userId: string, request: CreateFineTuningJobRequest): Promise<string> {
  const method = request.method?.type ?? 'supervised';
  const requested =
    request.method?.type === 'dpo' ? request.method.dpo?.hyperparameters
    : request.method?.type === 'supervised' ? request.method.supervised?.hyperparameters
    : request.method?.type === 'reinforcement' ? request.method.reinforcement.hyperparameters
    : request.hyperparameters;
  const rft = request.method?.type === 'reinforcement' ? request.method.reinforcement : undefined;
  const reinforcement = rft ? { grader: rft.grader, ...(rft.response_format ? { response_format: rft.response_format } : {}), ...resolveReinforcement(rft.hyperparameters) } : undefined;
  if (rft) await checkJudges(platform, userId, [rft.grader]);
  const training = await ownFile(platform, userId, request.training_file, 'training_file');
  const validation = request.validation_file ? await ownFile(platform, userId, request.validation_file, 'validation_file') : undefined;
  // A fine-tuned model or one of its checkpoints (ft:…) is continued, as OpenAI continues one: its base, and the
  // training goes on from its adapter (training_config.from_job); another user's is a 404 like an unknown one.
  const continued = 'base' in parseModelName(request.model) ? undefined : await resolveModelName(platform, userId, request.model);
  const baseModel = continued?.job?.base_model_id ?? request.model;
  const from = continued?.job ? { from_job: continued.job.job_id, ...(continued.choice.checkpoint_step !== undefined ? { from_checkpoint_step: continued.choice.checkpoint_step } : {}) } : {};
  const location = await locateBaseModel(platform, 'hub', baseModel, { loc: ['body', 'model'] });

  const jobId = newId('job');
  const kind: FileKind = method === 'dpo' ? 'preference' : method === 'reinforcement' ? 'prompt' : 'chat';
  const facts = (hyperparameters: ResolvedHyperparameters, error?: OpenAiJobFacts['error']): OpenAiJobFacts => ({
    training_file: training.dataset_id,
    validation_file: validation?.dataset_id ?? null,
    suffix: request.suffix ?? null,
    seed: request.seed ?? randomInt(2 ** 31 - 1),
    metadata: request.metadata ?? null,
    method,
    hyperparameters,
    ...(reinforcement ? { reinforcement } : {}),
    ...(error ? { error } : {}),
    ...(continued ? { model: request.model } : {}),
  });
  const earlier = [`Validating training file: ${training.dataset_id}`, ...(validation ? [`Validating validation file: ${validation.dataset_id}`] : [])];
  const jobRow = {
    job_id: jobId,
    user_id: userId,
    job_name: request.suffix ?? `fine-tune of ${training.filename}`,
    base_model_id: baseModel,
    modality: 'text' as const,
    blob_prefix: `jobs/${userKeySegment(userId)}/${jobId}/`,
    tracker_url: jobPageUrl(platform, jobId),
  };

  /** The job, created failed: a file that did not pass validation (OpenAI's invalid_training_file or
   *  invalid_validation_file; the job, not the create call, says so). */
  const failedJob = async (param: 'training_file' | 'validation_file', message: string, hyperparameters: ResolvedHyperparameters) => {
    const which = param === 'training_file' ? 'training' : 'validation';
    await platform.jobs.insert({
      ...jobRow,
      processed_dataset_id: null,
      training_config: { base_model_id: baseModel, method: 'LoRA', trainer_type: TRAINERS[method], ...from },
      openai: facts(hyperparameters, { code: `invalid_${which}_file`, param }) as unknown as Record<string, unknown>,
      failed: { error: `The ${which} file ${param === 'training_file' ? training.dataset_id : validation!.dataset_id} is not valid: ${message}` },
      earlier,
    });
    return jobId;
  };

  let dataset;
  let param: 'training_file' | 'validation_file' = 'training_file';
  // Written once every line is read: whether any carried tools (the submit then asks the model's template for them).
  const datasetConfig: Record<string, unknown> = { openai_training_file: training.dataset_id, openai_validation_file: validation?.dataset_id ?? null };
  const columns = kind === 'chat' ? ['messages'] : kind === 'prompt' ? ['prompt'] : ['prompt', 'chosen', 'rejected'];
  const written = (record: Record<string, unknown>) => {
    if ('tools' in record && !columns.includes('tools')) {
      columns.push('tools');
      datasetConfig['tools'] = true;
    }
    // A reinforcement line's other fields are the grader's item: each is a column.
    if (kind === 'prompt') for (const key of Object.keys(record)) if (!columns.includes(key)) columns.push(key);
    return record;
  };
  try {
    dataset = await writeProcessedDataset(
      platform,
      userId,
      {
        processed_dataset_id: newId('pd'),
        dataset_id: training.dataset_id,
        dataset_name: `${training.filename} (fine-tuning job ${jobId})`,
        dataset_subset: 'default',
        dataset_source: 'upload',
        processing_mode: TRAINER_DATASET_MODE[TRAINERS[method]],
        modality: 'text',
        config: datasetConfig,
        columns,
      },
      validation ? ['train', 'test'] : ['train'],
      async (write) => {
        for await (const record of readTrainingFile(platform, training, kind)) await write('train', written(record));
        if (!validation) return;
        param = 'validation_file';
        let kept = 0;
        for await (const record of readTrainingFile(platform, validation, kind)) {
          // eval_samples: the lines each evaluation grades (the rest are still checked).
          if (reinforcement?.eval_samples && kept >= reinforcement.eval_samples) continue;
          await write('test', written(record));
          kept += 1;
        }
      },
    );
  } catch (err) {
    if (!(err instanceof InvalidLine)) throw err;
    return failedJob(param, err.message, resolveHyperparameters(requested, 0, method));
  }

  const examples = dataset.splits.find((s) => s.split_name === 'train')!.num_rows;
  const hyperparameters = resolveHyperparameters(requested, examples, method);
  const kept = facts(hyperparameters);
  // About 100 step events over the run: what the events list shows.
  const totalSteps = Math.ceil(examples / hyperparameters.batch_size) * hyperparameters.n_epochs;
  const context = Math.min(MAX_EXAMPLE_TOKENS, (await modelContextLength(platform, location)) ?? 1024);
  const grpo = reinforcement ? grpoHyperparameters(reinforcement, hyperparameters.batch_size, context) : undefined;
  const evaluation = !validation ? {} : reinforcement?.eval_interval ? { eval_strategy: 'steps', eval_steps: reinforcement.eval_interval } : { eval_strategy: 'epoch', compute_eval_metrics: !reinforcement };
  const trainRequest: TrainRequest = {
    processed_dataset_id: dataset.processed_dataset_id,
    job_name: jobRow.job_name,
    dry_run: false,
    training_config: TrainingConfig.parse({
      base_model_id: baseModel,
      ...from,
      // where it was found: a model of the store is local (Compare showed `provider: hub` for the local tiny, #39)
      provider: location.kind === 'hub' ? 'hub' : 'local',
      method: 'LoRA',
      trainer_type: TRAINERS[method],
      hyperparameters: {
        ...deviceBatch(grpo?.completions ?? hyperparameters.batch_size),
        epochs: hyperparameters.n_epochs,
        learning_rate: BASE_LEARNING_RATE * hyperparameters.learning_rate_multiplier,
        seed: kept.seed,
        save_strategy: 'epoch',
        logging_steps: Math.max(1, Math.floor(totalSteps / 100)),
        max_length: context,
        ...(hyperparameters.beta !== undefined ? { beta: hyperparameters.beta } : {}),
        ...grpo?.settings,
      },
      eval_config: evaluation,
      ...(reinforcement ? { reward_config: [rewardOf(reinforcement.grader)] } : {}),
      ...(reinforcement?.response_format ? { response_format: reinforcement.response_format } : {}),
    }),
  };
  try {
    await submitTrainingJob(platform, userId, trainRequest, {
      job_id: jobId,
      openai: kept as unknown as Record<string, unknown>,
      earlier: [...earlier, 'Files validated, moving job to queued state'],
    });
  } catch (err) {
    // Refused after all (e.g. no worker can train it): the dataset made for it goes too.
    await platform.datasets.deleteProcessed(userId, dataset.processed_dataset_id);
    await platform.blobs.deletePrefix(dataset.blob_prefix);
    // The submit's check found what the core refuses in the data (every example cut before its answer, #56): the
    // file did not pass validation, as OpenAI says it.
    if (err instanceof UnprocessableEntity && err.issues.length === 1 && err.issues[0]!.loc.join('.') === 'body.training_config') {
      return failedJob('training_file', err.issues[0]!.msg, hyperparameters);
    }
    throw err;
  }
  return jobId;
}

/** The caller's job for a /v1 id; NotFound otherwise. */
export async function ownJob(platform: Platform, userId: string, jobId: string) {
  const job = await platform.jobs.get(userId, jobId);
  if (!job) throw new NotFound('fine-tuning job', jobId);
  return job;
}
