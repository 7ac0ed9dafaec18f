// /v1/fine_tuning/jobs: the job request (methods and their hyperparameters), the job, its events and its checkpoints.
import { z } from 'zod';
import { boundedInt } from '../common.ts';
import { Grader, SampleResponseFormat } from '../graders.ts';
import { nullable, UnixSeconds } from './common.ts';

const Auto = z.literal('auto');
const Epochs = z.union([Auto, z.number().int().min(1).max(50)]);
const BatchSize = z.union([Auto, z.number().int().min(1).max(256)]);
const LrMultiplier = z.union([Auto, z.number().positive().max(100)]);
const Beta = z.union([Auto, z.number().positive().max(2)]);

export const SupervisedHyperparameters = z.object({
  n_epochs: Epochs.optional(),
  batch_size: BatchSize.optional(),
  learning_rate_multiplier: LrMultiplier.optional(),
});
export const DpoHyperparameters = SupervisedHyperparameters.extend({ beta: Beta.optional() });

export const ReinforcementHyperparameters = SupervisedHyperparameters.extend({
  compute_multiplier: z.union([Auto, z.number().positive().max(16)]).optional().describe('Answers sampled per prompt: 4 × this (auto 1), at least 2'),
  eval_interval: z.union([Auto, z.number().int().min(1).max(100_000)]).optional().describe('Training steps between evaluations on the validation file (auto: once an epoch)'),
  eval_samples: z.union([Auto, z.number().int().min(1).max(10_000)]).optional().describe('Validation lines each evaluation grades (auto: all)'),
  reasoning_effort: z
    .literal('default')
    .optional()
    .describe('Only default: the models trained here have no reasoning-effort setting (OpenAI’s low, medium and high are a 400)'),
});

export const FineTuningMethodInput = z.discriminatedUnion('type', [
  z.object({ type: z.literal('supervised'), supervised: z.object({ hyperparameters: SupervisedHyperparameters.optional() }).optional() }),
  z.object({ type: z.literal('dpo'), dpo: z.object({ hyperparameters: DpoHyperparameters.optional() }).optional() }),
  z.object({
    type: z.literal('reinforcement'),
    reinforcement: z.object({
      grader: Grader,
      hyperparameters: ReinforcementHyperparameters.optional(),
      response_format: SampleResponseFormat.optional().describe('A JSON Schema every sampled answer follows, so the grader reads {{sample.output_json.<field>}} (OpenAI’s RFT response_format)'),
    }),
  }),
]);

export const CreateFineTuningJobRequest = z
  .object({
    model: z.string().min(1).max(256).describe('A base model: a name in the local model store or a hub model id'),
    training_file: z.string().min(1).max(256).describe('An uploaded file id (POST /v1/files)'),
    validation_file: nullable(z.string().min(1).max(256)).optional(),
    suffix: nullable(
      z
        .string()
        .min(1)
        .max(64)
        .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, - and _ only'),
    ).optional().describe('Put into fine_tuned_model: ft:<model>:<suffix>:<job id>'),
    seed: nullable(boundedInt(0)).optional().describe('Random seed; chosen and reported when absent'),
    metadata: nullable(z.record(z.string().max(64), z.string().max(512))).optional(),
    hyperparameters: DpoHyperparameters.optional().describe('Deprecated by OpenAI in favour of method; still accepted (supervised)'),
    method: FineTuningMethodInput.optional(),
    integrations: nullable(z.array(z.unknown()).max(0, 'integrations (Weights & Biases) are not available here; leave them out')).optional(),
  })
  .meta({ id: 'CreateFineTuningJobRequest', examples: [{ model: 'google/gemma-3-270m-it', training_file: 'ds_0123456789abcdef01234567', suffix: 'support' }] });
export type CreateFineTuningJobRequest = z.infer<typeof CreateFineTuningJobRequest>;

/** Hyperparameters as the job shows them: the values used, "auto" already resolved. */
const ResolvedHyperparameters = z.object({
  n_epochs: z.number().int(),
  batch_size: z.number().int(),
  learning_rate_multiplier: z.number(),
});
const ResolvedDpoHyperparameters = ResolvedHyperparameters.extend({ beta: z.number() });

const ResolvedReinforcementHyperparameters = ResolvedHyperparameters.extend({
  compute_multiplier: z.number(),
  eval_interval: nullable(z.number().int()).describe('null: once an epoch'),
  eval_samples: nullable(z.number().int()).describe('null: every validation line'),
});

export const FineTuningMethod = z.union([
  z.object({ type: z.literal('supervised'), supervised: z.object({ hyperparameters: ResolvedHyperparameters }) }),
  z.object({ type: z.literal('dpo'), dpo: z.object({ hyperparameters: ResolvedDpoHyperparameters }) }),
  z.object({ type: z.literal('reinforcement'), reinforcement: z.object({ grader: Grader, hyperparameters: ResolvedReinforcementHyperparameters, response_format: SampleResponseFormat.optional() }) }),
  z.object({ type: z.string().describe('orpo or grpo: a job made through POST /train'), hyperparameters: ResolvedHyperparameters }),
]);

export const FineTuningJobStatus = z.enum(['validating_files', 'queued', 'running', 'paused', 'succeeded', 'failed', 'cancelled']);

export const FineTuningJob = z
  .object({
    id: z.string().describe('The training job id (GET /jobs/{id} on the training service)'),
    object: z.literal('fine_tuning.job'),
    created_at: UnixSeconds,
    finished_at: nullable(UnixSeconds),
    estimated_finish: nullable(UnixSeconds),
    error: nullable(z.object({ code: z.string(), message: z.string(), param: nullable(z.string()) })),
    fine_tuned_model: nullable(z.string()).describe('ft:<model>:<suffix or custom>:<job id>, once succeeded'),
    model: z.string(),
    organization_id: z.string().describe('The owner: the user id'),
    result_files: z.array(z.string()),
    seed: z.number().int(),
    status: FineTuningJobStatus,
    trained_tokens: nullable(z.number().int()).describe('Tokens the job trained on, all epochs, counted by the trainer'),
    training_file: nullable(z.string()),
    validation_file: nullable(z.string()),
    hyperparameters: ResolvedHyperparameters,
    method: FineTuningMethod,
    integrations: nullable(z.array(z.unknown())),
    metadata: nullable(z.record(z.string(), z.string())),
    user_provided_suffix: nullable(z.string()),
  })
  .meta({ id: 'FineTuningJob' });
export type FineTuningJob = z.infer<typeof FineTuningJob>;

/** One page of a cursor-paginated list (`after` = the last id of the page before). */
const page = <T extends z.ZodType>(item: T) => z.object({ object: z.literal('list'), data: z.array(item), has_more: z.boolean() });

export const FineTuningJobList = page(FineTuningJob).meta({ id: 'FineTuningJobList' });

export const FineTuningJobEvent = z
  .object({
    id: z.string(),
    object: z.literal('fine_tuning.job.event'),
    created_at: UnixSeconds,
    level: z.enum(['info', 'warn', 'error']),
    message: z.string(),
    type: z.enum(['message', 'metrics']),
    data: nullable(z.record(z.string(), z.unknown())),
  })
  .meta({ id: 'FineTuningJobEvent' });
export const FineTuningJobEventList = page(FineTuningJobEvent).meta({ id: 'FineTuningJobEventList' });

export const FineTuningCheckpoint = z
  .object({
    id: z.string(),
    object: z.literal('fine_tuning.job.checkpoint'),
    created_at: UnixSeconds,
    fine_tuned_model_checkpoint: z.string().describe('A model id chat completions accept: …:ckpt-step-<n>'),
    fine_tuning_job_id: z.string(),
    step_number: z.number().int(),
    metrics: z.object({
      step: z.number().int(),
      train_loss: nullable(z.number()),
      train_mean_token_accuracy: nullable(z.number()),
      valid_loss: nullable(z.number()),
      valid_mean_token_accuracy: nullable(z.number()),
      full_valid_loss: nullable(z.number()),
      full_valid_mean_token_accuracy: nullable(z.number()),
    }),
  })
  .meta({ id: 'FineTuningCheckpoint' });
export const FineTuningCheckpointList = page(FineTuningCheckpoint)
  .extend({ first_id: nullable(z.string()), last_id: nullable(z.string()) })
  .meta({ id: 'FineTuningCheckpointList' });
