// Rows → OpenAI's objects: an upload is a file, a training job a fine-tuning job (its status mapped from ours, a
// user's cancel read from cancelled_at), its event log the job's events, its stored checkpoints OpenAI's checkpoints,
// and model names in both directions (ft:<base>:<suffix or custom>:<job id>, a checkpoint …:ckpt-step-<n>).
import type { BatchWithCounts, CheckpointRow, JobEventRow, RawDatasetRow, TrainingJobRow, UploadRow } from '@ftp/platform';
import { checkpointModelName, fineTunedModelName } from '@ftp/jobs/models';
import { finiteOrNull, presentProgress, trainerOf } from '@ftp/jobs/training';
import { jobConfig, type BatchObject, type FileObject, type FineTuningJob } from '@ftp/schema';
import type { OpenAiJobFacts, ResolvedHyperparameters } from './fine-tuning.ts';

export const seconds = (value: Date | string): number => Math.floor(new Date(value).getTime() / 1000);

/** A page of a list already in order: the items after the one with id `after` (from the start when it is absent or
 *  unknown), at most `limit`, as OpenAI's list object. */
export function listPage<T extends { id: string }>(items: T[], after: string | undefined, limit: number) {
  const start = after ? items.findIndex((item) => item.id === after) + 1 : 0;
  const data = items.slice(start, start + limit);
  return { object: 'list' as const, data, has_more: start + limit < items.length, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}

export function presentFile(row: RawDatasetRow): FileObject {
  return {
    id: row.dataset_id,
    object: 'file',
    bytes: Number(row.size_bytes),
    created_at: seconds(row.created_at),
    filename: row.filename,
    purpose: row.purpose,
    status: 'processed',
    status_details: null,
  };
}

const secondsOrNull = (value: Date | null): number | null => (value === null ? null : seconds(value));

/** A batch as OpenAI shows it, its counts from the lines answered so far. */
export function presentBatch(row: BatchWithCounts): BatchObject {
  return {
    id: row.batch_id,
    object: 'batch',
    endpoint: row.endpoint,
    errors: row.errors ? { object: 'list', data: row.errors } : null,
    input_file_id: row.input_file_id,
    completion_window: row.completion_window,
    status: row.status,
    output_file_id: row.output_file_id,
    error_file_id: row.error_file_id,
    created_at: seconds(row.created_at),
    in_progress_at: secondsOrNull(row.in_progress_at),
    expires_at: seconds(row.expires_at),
    finalizing_at: secondsOrNull(row.finalizing_at),
    completed_at: secondsOrNull(row.completed_at),
    failed_at: secondsOrNull(row.failed_at),
    expired_at: secondsOrNull(row.expired_at),
    cancelling_at: secondsOrNull(row.cancelling_at),
    cancelled_at: secondsOrNull(row.cancelled_at),
    request_counts: { total: row.total, completed: row.completed, failed: row.failed },
    metadata: row.metadata,
  };
}

/** An upload in parts as OpenAI shows it; `file` once completed (null again if that file was deleted since). */
export function presentUpload(row: UploadRow, file: RawDatasetRow | undefined) {
  return {
    id: row.upload_id,
    object: 'upload' as const,
    bytes: Number(row.bytes),
    created_at: seconds(row.created_at),
    expires_at: seconds(row.expires_at),
    filename: row.filename,
    purpose: row.purpose,
    status: row.status,
    file: file ? presentFile(file) : null,
  };
}

function status(job: TrainingJobRow): FineTuningJob['status'] {
  switch (job.status) {
    case 'queued':
      return 'queued';
    case 'preparing':
    case 'training':
      return 'running';
    case 'paused':
      return 'paused';
    case 'completed':
      return 'succeeded';
    case 'failed':
      return job.cancelled_at ? 'cancelled' : 'failed';
  }
}

/** The passes over the train split a job makes: its epochs, or, when max_steps ends it, the epochs those steps reach
 *  (the last one partly; from its pre-flight report's steps per epoch, the requested epochs until there is one). */
export function epochsRun(job: Pick<TrainingJobRow, 'training_config' | 'preflight'>): number {
  const hp = jobConfig(job).hyperparameters;
  const perEpoch = (job.preflight as { steps?: { per_epoch?: number } } | null)?.steps?.per_epoch;
  if (hp.max_steps > 0 && perEpoch) return Math.ceil(hp.max_steps / perEpoch);
  return hp.epochs;
}

/** The hyperparameters a job made through POST /train shows: its own, in OpenAI's terms. */
function ownHyperparameters(job: TrainingJobRow): ResolvedHyperparameters & { beta: number } {
  const hp = jobConfig(job).hyperparameters;
  return {
    n_epochs: epochsRun(job),
    batch_size: hp.batch_size * hp.gradient_accumulation_steps,
    learning_rate_multiplier: hp.learning_rate / 2e-4,
    beta: hp.beta,
  };
}

export function presentFineTuningJob(job: TrainingJobRow): FineTuningJob {
  const facts = job.openai as OpenAiJobFacts | null;
  const trainer = trainerOf(job);
  const own = ownHyperparameters(job);
  const hyperparameters = facts?.hyperparameters ?? own;
  const { beta, ...plain } = { beta: own.beta, ...hyperparameters };
  const rft = facts?.reinforcement;
  const method: FineTuningJob['method'] =
    trainer === 'sft' ? { type: 'supervised', supervised: { hyperparameters: plain } }
    : trainer === 'dpo' ? { type: 'dpo', dpo: { hyperparameters: { ...plain, beta } } }
    : rft ? { type: 'reinforcement', reinforcement: { grader: rft.grader, hyperparameters: { ...plain, compute_multiplier: rft.compute_multiplier, eval_interval: rft.eval_interval, eval_samples: rft.eval_samples }, ...(rft.response_format ? { response_format: rft.response_format } : {}) } }
    : { type: trainer, hyperparameters: plain };
  const state = status(job);
  // As the training service serves it (never negative, never NaN): a worker killed after its last step left -0.1 (#56).
  const eta = job.progress ? presentProgress(job.progress).eta_seconds : null;
  const trained = finiteOrNull(job.metrics?.['trained_tokens']);
  return {
    id: job.job_id,
    object: 'fine_tuning.job',
    created_at: seconds(job.created_at),
    finished_at: job.finished_at ? seconds(job.finished_at) : null,
    estimated_finish: state === 'running' && eta !== null ? seconds(job.updated_at) + Math.round(eta) : null,
    error: state === 'failed' ? { code: facts?.error?.code ?? 'training_failed', message: job.error ?? 'the job failed', param: facts?.error?.param ?? null } : null,
    fine_tuned_model: state === 'succeeded' ? fineTunedModelName(job) : null,
    model: facts?.model ?? job.base_model_id,
    organization_id: job.user_id,
    result_files: [],
    seed: facts?.seed ?? jobConfig(job).hyperparameters.seed,
    status: state,
    trained_tokens: trained === null ? null : Math.round(trained),
    training_file: facts?.training_file ?? null,
    validation_file: facts?.validation_file ?? null,
    hyperparameters: plain,
    method,
    integrations: null,
    metadata: facts?.metadata ?? null,
    user_provided_suffix: facts?.suffix ?? null,
  };
}

const STATUS_MESSAGES: Record<string, string> = {
  queued: 'Job queued',
  preparing: 'Fine-tuning job started: loading the dataset and the base model',
  training: 'Training started',
  completed: 'The job has successfully completed',
};

const num = finiteOrNull;

/** Each grader's mean reward from the trainer's figures (TRL logs `<prefix><name>/mean`). */
function graderMeans(figures: Record<string, unknown>, prefix: string): Record<string, number> {
  return Object.fromEntries(Object.entries(figures).flatMap(([key, value]) => (key.startsWith(prefix) && key.endsWith('/mean') && num(value) !== null ? [[key.slice(prefix.length, -'/mean'.length), value as number]] : [])));
}

const reinforcement = (job: TrainingJobRow): boolean => jobConfig(job).trainer_type === 'grpo';

/** One entry of the job's event log as OpenAI's event (null for nothing worth showing). */
export function presentEvent(job: TrainingJobRow, event: JobEventRow) {
  const base = { id: `ftevent-${job.job_id}-${event.seq}`, object: 'fine_tuning.job.event' as const, created_at: seconds(event.created_at) };
  const data = event.data;
  switch (event.kind) {
    case 'status': {
      const value = String(data['status']);
      if (value === 'failed') return { ...base, level: 'error' as const, message: String(data['error'] ?? 'The job failed'), type: 'message' as const, data: null };
      const message = value === 'completed' ? `New fine-tuned model created: ${fineTunedModelName(job)}. ${STATUS_MESSAGES[value]}` : (STATUS_MESSAGES[value] ?? `Job ${value}`);
      return { ...base, level: 'info' as const, message, type: 'message' as const, data: null };
    }
    case 'progress': {
      const step = num(data['step']);
      const loss = num(data['loss']);
      const total = num(data['total_steps']);
      const extra = (data['extra'] ?? {}) as Record<string, unknown>;
      const accuracy = num(extra['mean_token_accuracy']);
      const reward = num(extra['reward']);
      return {
        ...base,
        level: 'info' as const,
        // GRPO's loss is ~0 by construction (the advantages of a group sum to 0): its figure is the reward (#39).
        message: `Step ${step}${total ? `/${total}` : ''}: ${reinforcement(job) && reward !== null ? `reward=${reward.toFixed(4)}` : `training loss=${loss === null ? 'n/a' : loss.toFixed(4)}${reward === null ? '' : `, reward=${reward.toFixed(4)}`}`}`,
        type: 'metrics' as const,
        data: {
          step, total_steps: total, train_loss: loss, train_mean_token_accuracy: accuracy, learning_rate: num(data['learning_rate']), epoch: num(data['epoch']),
          ...(reward === null ? {} : { train_reward_mean: reward, train_reward_std: num(extra['reward_std']), train_rewards: graderMeans(extra, 'rewards/') }),
        },
      };
    }
    case 'metrics': {
      const step = num(data['step']);
      const loss = num(data['eval_loss']);
      const reward = num(data['eval_reward']);
      if (loss === null && reward === null) {
        // GRPO's figures after training are its last training rewards (the core cannot score a prompt-only split
        // without sampling): no evaluation, so no "validation loss=n/a" (#39).
        const trained = num(data['reward']);
        if (!data['final'] || trained === null) return null;
        return {
          ...base,
          level: 'info' as const,
          message: `Training ended at step ${step}: reward=${trained.toFixed(4)}`,
          type: 'metrics' as const,
          data: { step, train_reward_mean: trained, train_reward_std: num(data['reward_std']), train_rewards: graderMeans(data, 'rewards/') },
        };
      }
      return {
        ...base,
        level: 'info' as const,
        // The evaluation after training measures per assistant token: at the last step it stands beside the trainer's.
        message: `${data['final'] ? `Final evaluation at step ${step}` : `Step ${step}`}: validation loss=${loss === null ? 'n/a' : loss.toFixed(4)}${reward === null ? '' : `, reward=${reward.toFixed(4)}`}`,
        type: 'metrics' as const,
        data: { step, valid_loss: loss, valid_mean_token_accuracy: num(data['accuracy']), ...(reward === null ? {} : { valid_reward_mean: reward, valid_rewards: graderMeans(data, 'eval_rewards/') }) },
      };
    }
    case 'log': {
      const level = data['level'] === 'warning' ? ('warn' as const) : data['level'] === 'error' ? ('error' as const) : ('info' as const);
      return { ...base, level, message: String(data['message'] ?? ''), type: 'message' as const, data: null };
    }
  }
}

/** A stored checkpoint with the accuracies the event log has for its step. */
export function presentCheckpoint(job: TrainingJobRow, checkpoint: CheckpointRow, events: JobEventRow[]) {
  const atOrBefore = events.filter((e) => num(e.data['step']) !== null && num(e.data['step'])! <= checkpoint.step);
  const lastProgress = atOrBefore.filter((e) => e.kind === 'progress').at(-1);
  const evaluation = atOrBefore.filter((e) => e.kind === 'metrics' && num(e.data['step']) === checkpoint.step).at(-1);
  const validLoss = num(checkpoint.eval_loss) ?? num(evaluation?.data['eval_loss']);
  const validAccuracy = num(evaluation?.data['accuracy']);
  return {
    id: `ftckpt-${job.job_id}-${checkpoint.step}`,
    object: 'fine_tuning.job.checkpoint' as const,
    created_at: seconds(checkpoint.created_at),
    fine_tuned_model_checkpoint: checkpointModelName(job, checkpoint.step),
    fine_tuning_job_id: job.job_id,
    step_number: checkpoint.step,
    metrics: {
      step: checkpoint.step,
      train_loss: num(checkpoint.train_loss),
      train_mean_token_accuracy: num(((lastProgress?.data['extra'] ?? {}) as Record<string, unknown>)['mean_token_accuracy']),
      valid_loss: validLoss,
      valid_mean_token_accuracy: validAccuracy,
      // Every evaluation here runs over the whole validation file.
      full_valid_loss: validLoss,
      full_valid_mean_token_accuracy: validAccuracy,
    },
  };
}
