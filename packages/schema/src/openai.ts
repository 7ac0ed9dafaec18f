// The OpenAI-compatible surface (/v1): OpenAI's own field names and shapes for files, fine-tuning jobs, models and
// chat completions, so the official SDKs work unchanged (decisions.md, "The OpenAI-compatible surface"). Requests are
// lenient as OpenAI's are (unknown fields are dropped, not refused); responses carry every field the SDKs read.
import { z } from 'zod';
import { boundedInt, contentSchemaOf, MAX_JSON_DEPTH } from './common.ts';
import { Grader, SampleResponseFormat } from './graders.ts';

const UnixSeconds = z.number().int().nonnegative().describe('Unix time, seconds');
const Auto = z.literal('auto');
const nullable = <T extends z.ZodType>(schema: T) => schema.nullable();

export const OpenAiError = z
  .object({
    error: z.object({
      message: z.string().describe('One sentence a person can act on'),
      type: z.string().describe('invalid_request_error, authentication_error, not_found_error, conflict_error, server_error, …'),
      param: nullable(z.string()).describe('The request field at fault, dotted (e.g. hyperparameters.n_epochs)'),
      code: nullable(z.string()),
    }),
  })
  .meta({ id: 'OpenAiError', description: 'The error body of every /v1 route, as OpenAI sends it' });

// ---------------------------------------------------------------------------------------------- files

/** What a file is for: training data, a batch's input file (POST /v1/batches), or a batch's output or error file (written
 *  by the batch; not uploaded). */
export const FilePurpose = z.enum(['fine-tune', 'batch', 'batch_output']).describe('fine-tune (training data), batch (a batch’s input), batch_output (written by a batch)');
/** What an upload may be for. */
export const UploadPurpose = z.enum(['fine-tune', 'batch']);

export const FileObject = z
  .object({
    id: z.string(),
    object: z.literal('file'),
    bytes: z.number().int().nonnegative(),
    created_at: UnixSeconds,
    filename: z.string(),
    purpose: FilePurpose,
    status: z.literal('processed').describe('Stored and readable (each line is checked when a job uses it)'),
    status_details: z.null(),
  })
  .meta({ id: 'FileObject', description: 'An uploaded file: the same upload POST /datasets/upload makes (id = dataset_id)' });
export type FileObject = z.infer<typeof FileObject>;

export const FileList = z
  .object({
    object: z.literal('list'),
    data: z.array(FileObject),
    has_more: z.boolean(),
    first_id: nullable(z.string()),
    last_id: nullable(z.string()),
  })
  .meta({ id: 'FileList' });

export const FileDeleted = z.object({ id: z.string(), object: z.literal('file'), deleted: z.literal(true) }).meta({ id: 'FileDeleted' });

export const ListQuery = z.object({
  after: z.string().min(1).max(256).optional().describe('The last id of the previous page'),
  limit: z.coerce.number().int().min(1).max(1000).default(20),
});

export const FileListQuery = z.object({
  after: z.string().min(1).max(256).optional().describe('The last id of the previous page'),
  limit: z.coerce.number().int().min(1).max(10000).default(10000),
  order: z.enum(['asc', 'desc']).default('desc'),
  purpose: z.string().optional().describe('Only files of this purpose (fine-tune, batch, batch_output); any other lists none'),
});

// ------------------------------------------------------------------------------------- fine-tuning jobs

// ---------------------------------------------------------------------------------------------- uploads

/** OpenAI's part size limit (the SDKs' upload_file_chunked sends parts of this size). */
export const UPLOAD_PART_MAX_BYTES = 64 * 1024 * 1024;
/** How long an upload takes parts before it expires (OpenAI: an hour). */
export const UPLOAD_EXPIRES_S = 3600;

export const CreateUploadRequest = z
  .object({
    bytes: z.number().int().min(1).describe('The size of the whole file; the parts must add up to it (at most MAX_UPLOAD_BYTES)'),
    filename: z.string().min(1).max(256).regex(/^[^\u0000]*$/, 'no NUL character'),
    mime_type: z.string().min(1).max(256).describe('Recorded; the lines are checked when a job uses the file, as for /v1/files'),
    purpose: UploadPurpose,
    expires_after: z.unknown().optional().describe('Refused (a 400): files here are kept until deleted; leave it out'),
  })
  .meta({ id: 'CreateUploadRequest', examples: [{ bytes: 2147483648, filename: 'train.jsonl', mime_type: 'application/jsonl', purpose: 'fine-tune' }] });

export const UploadObject = z
  .object({
    id: z.string(),
    object: z.literal('upload'),
    bytes: z.number().int(),
    created_at: UnixSeconds,
    expires_at: UnixSeconds,
    filename: z.string(),
    purpose: z.string(),
    status: z.enum(['pending', 'completed', 'cancelled', 'expired']),
    file: nullable(FileObject).describe('The file the parts became, once completed'),
  })
  .meta({ id: 'UploadObject', description: 'A file sent in parts (OpenAI’s Upload); it takes parts for an hour' });

export const UploadPartObject = z
  .object({ id: z.string(), object: z.literal('upload.part'), created_at: UnixSeconds, upload_id: z.string() })
  .meta({ id: 'UploadPartObject' });

export const CompleteUploadRequest = z
  .object({
    part_ids: z.array(z.string().min(1).max(256)).min(1).max(10000).describe('The parts in the order they make the file'),
    md5: z.string().regex(/^[0-9a-fA-F]{32}$/, '32 hexadecimal digits').optional().describe('Checked against the joined file when given'),
  })
  .meta({ id: 'CompleteUploadRequest' });

// ---------------------------------------------------------------------------------------------- batches

/** OpenAI's limit of lines in one batch input file. */
export const BATCH_MAX_LINES = 50_000;
/** The one completion window OpenAI offers. */
export const BATCH_COMPLETION_WINDOW = '24h';

export const CreateBatchRequest = z
  .object({
    input_file_id: z.string().min(1).max(256).describe('A file uploaded with purpose batch: one request per line, {custom_id, method: POST, url, body}'),
    endpoint: z.enum(['/v1/chat/completions', '/v1/responses', '/v1/embeddings', '/v1/completions'])
      .describe('/v1/chat/completions or /v1/responses; embeddings and completions are refused (a 400: not served here)'),
    completion_window: z.literal(BATCH_COMPLETION_WINDOW).describe('Lines not answered within 24 h are error lines (batch_expired)'),
    metadata: z.record(z.string().max(64), z.string().max(512)).nullable().optional().describe('Up to 16 pairs, kept and shown'),
    output_expires_after: z.unknown().optional().describe('Refused (a 400): output files are kept until deleted; leave it out'),
  })
  .meta({ id: 'CreateBatchRequest', examples: [{ input_file_id: 'ds_abc123', endpoint: '/v1/chat/completions', completion_window: '24h' }] });

const BatchError = z.object({ code: z.string(), message: z.string(), param: nullable(z.string()), line: nullable(z.number().int()) });
const nullableSeconds = nullable(UnixSeconds);

export const BatchObject = z
  .object({
    id: z.string(),
    object: z.literal('batch'),
    endpoint: z.string(),
    errors: nullable(z.object({ object: z.literal('list'), data: z.array(BatchError) })).describe('Why the input file could not be run at all'),
    input_file_id: z.string(),
    completion_window: z.string(),
    status: z.enum(['validating', 'failed', 'in_progress', 'finalizing', 'completed', 'expired', 'cancelling', 'cancelled']),
    output_file_id: nullable(z.string()).describe('The answered lines (purpose batch_output), once finalized'),
    error_file_id: nullable(z.string()).describe('The lines that failed, once finalized (absent when none did)'),
    created_at: UnixSeconds,
    in_progress_at: nullableSeconds,
    expires_at: nullableSeconds,
    finalizing_at: nullableSeconds,
    completed_at: nullableSeconds,
    failed_at: nullableSeconds,
    expired_at: nullableSeconds,
    cancelling_at: nullableSeconds,
    cancelled_at: nullableSeconds,
    request_counts: z.object({ total: z.number().int(), completed: z.number().int(), failed: z.number().int() }),
    metadata: nullable(z.record(z.string(), z.string())),
  })
  .meta({ id: 'BatchObject', description: 'A file of requests answered by the workers (OpenAI’s Batch)' });
export type BatchObject = z.infer<typeof BatchObject>;

export const BatchList = z
  .object({ object: z.literal('list'), data: z.array(BatchObject), has_more: z.boolean(), first_id: nullable(z.string()), last_id: nullable(z.string()) })
  .meta({ id: 'BatchList' });

/** One line of a batch's input file. */
export const BatchInputLine = z.object({
  custom_id: z.string().min(1).max(512),
  method: z.literal('POST'),
  url: z.string(),
  body: z.record(z.string(), z.unknown()),
});

// ------------------------------------------------------------------------------------------------ webhooks

/** The events sent (#42): OpenAI's for what this stack has (fine-tuning jobs, batches), and ours where OpenAI has none. */
export const WEBHOOK_EVENT_TYPES = [
  'fine_tuning.job.succeeded',
  'fine_tuning.job.failed',
  'fine_tuning.job.cancelled',
  'fine_tuning.job.started',
  'batch.completed',
  'batch.failed',
  'batch.expired',
  'batch.cancelled',
  'export.completed',
  'export.failed',
  'evaluation.completed',
] as const;
export const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES);

const endpointFields = {
  id: z.string(),
  object: z.literal('webhook_endpoint'),
  created_at: UnixSeconds,
  updated_at: UnixSeconds.describe('The last change of its URL, name, event types or secret'),
  name: z.string(),
  url: z.string().describe('Where the events are POSTed, signed (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature)'),
  event_types: z.array(z.string()),
  signing_secret_hint: nullable(z.string()).describe('The secret’s last characters'),
};

export const WebhookEndpoint = z.object(endpointFields).meta({ id: 'WebhookEndpoint', description: 'Where a user’s events are sent' });
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

export const WebhookEndpointWithSecret = z
  .object({ ...endpointFields, signing_secret: z.string().describe('whsec_…: shown this once (at create and rotate_secret); what client.webhooks.unwrap verifies with') })
  .meta({ id: 'WebhookEndpointWithSecret' });
export type WebhookEndpointWithSecret = z.infer<typeof WebhookEndpointWithSecret>;

export const WebhookEndpointList = z
  .object({ object: z.literal('list'), data: z.array(WebhookEndpoint), has_more: z.boolean(), first_id: nullable(z.string()), last_id: nullable(z.string()) })
  .meta({ id: 'WebhookEndpointList' });
export type WebhookEndpointList = z.infer<typeof WebhookEndpointList>;

const EndpointName = z.string().min(1).max(256).regex(/^[^\u0000]*$/, 'no NUL character');
const EndpointUrl = z.string().max(2048).url().describe('https (http and private addresses only where the operator set WEBHOOK_ALLOW_PRIVATE)');
const EndpointEventTypes = z.array(WebhookEventType).min(1).max(WEBHOOK_EVENT_TYPES.length);

export const CreateWebhookEndpointRequest = z
  .object({ name: EndpointName, url: EndpointUrl, event_types: EndpointEventTypes })
  .meta({ id: 'CreateWebhookEndpointRequest', examples: [{ name: 'jobs', url: 'https://example.com/webhooks', event_types: ['fine_tuning.job.succeeded', 'fine_tuning.job.failed'] }] });

export const UpdateWebhookEndpointRequest = z
  .object({ name: EndpointName.optional(), url: EndpointUrl.optional(), event_types: EndpointEventTypes.optional() })
  .meta({ id: 'UpdateWebhookEndpointRequest' });

export const RotateWebhookSecretRequest = z
  .object({ keep_old_secret_active_for_24_hours: z.boolean().optional().describe('Sign with the previous secret too for 24 h (two signatures in webhook-signature)') })
  .meta({ id: 'RotateWebhookSecretRequest' });

export const TestWebhookEndpointRequest = z.object({ event_type: WebhookEventType }).meta({ id: 'TestWebhookEndpointRequest' });

export const WebhookEndpointTestResult = z
  .object({
    object: z.literal('webhook_endpoint.test'),
    event_type: z.string(),
    status_code: z.number().int().describe('What the endpoint answered (0: it could not be reached; the message is in the deliveries of no event)'),
    success: z.literal(true),
    webhook_endpoint_id: z.string(),
  })
  .meta({ id: 'WebhookEndpointTestResult' });
export type WebhookEndpointTestResult = z.infer<typeof WebhookEndpointTestResult>;

export const WebhookEndpointDeleted = z
  .object({ id: z.string(), object: z.literal('webhook_endpoint.deleted'), deleted: z.literal(true) })
  .meta({ id: 'WebhookEndpointDeleted' });

export const WebhookEventTypeList = z.object({ object: z.literal('list'), data: z.array(z.string()) }).meta({ id: 'WebhookEventTypeList' });
export type WebhookEventTypeList = z.infer<typeof WebhookEventTypeList>;

export const WebhookDelivery = z
  .object({
    id: z.string(),
    object: z.literal('webhook_endpoint.delivery'),
    event_id: z.string().describe('The event’s id: webhook-id, the same at every attempt'),
    event_type: z.string(),
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int(),
    last_status_code: nullable(z.number().int()),
    last_error: nullable(z.string()),
    next_attempt_at: nullable(UnixSeconds).describe('When it is tried again (pending)'),
    delivered_at: nullable(UnixSeconds),
    created_at: UnixSeconds,
  })
  .meta({ id: 'WebhookDelivery', description: 'One event sent to one endpoint, and how its attempts went (ours: OpenAI shows deliveries in its dashboard only)' });
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const WebhookDeliveryList = z.object({ object: z.literal('list'), data: z.array(WebhookDelivery), has_more: z.boolean() }).meta({ id: 'WebhookDeliveryList' });
export type WebhookDeliveryList = z.infer<typeof WebhookDeliveryList>;

/** An event as it is sent: OpenAI's event object. */
export const WebhookEvent = z
  .object({ id: z.string(), object: z.literal('event'), type: z.string(), created_at: UnixSeconds, data: z.record(z.string(), z.unknown()) })
  .meta({ id: 'WebhookEvent' });
export type WebhookEvent = z.infer<typeof WebhookEvent>;

// ------------------------------------------------------------------------------- checkpoint permissions

export const CheckpointPermission = z
  .object({ id: z.string(), object: z.literal('checkpoint.permission'), created_at: UnixSeconds, project_id: z.string().describe('The user let run the checkpoint') })
  .meta({ id: 'CheckpointPermission', description: 'Another user (OpenAI’s project: a user id here) let chat with, evaluate and fine-tune from one checkpoint' });

export const CheckpointPermissionList = z
  .object({ object: z.literal('list'), data: z.array(CheckpointPermission), has_more: z.boolean(), first_id: nullable(z.string()), last_id: nullable(z.string()) })
  .meta({ id: 'CheckpointPermissionList' });

export const CreateCheckpointPermissionRequest = z
  .object({ project_ids: z.array(z.string().min(1).max(256).regex(/^[^\u0000]*$/, 'no NUL character')).min(1).max(100).describe('The user ids to let run the checkpoint') })
  .meta({ id: 'CreateCheckpointPermissionRequest', examples: [{ project_ids: ['alice'] }] });

export const CheckpointPermissionQuery = z.object({
  after: z.string().min(1).max(256).optional().describe('The last id of the previous page'),
  limit: z.coerce.number().int().min(1).max(100).default(10),
  order: z.enum(['ascending', 'descending']).default('descending'),
  project_id: z.string().min(1).max(256).optional().describe('Only this user’s permission'),
});

export const CheckpointPermissionDeleted = z
  .object({ id: z.string(), object: z.literal('checkpoint.permission'), deleted: z.literal(true) })
  .meta({ id: 'CheckpointPermissionDeleted' });

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

/** POST /v1/fine_tuning/alpha/graders/validate and /run (the pinned openai SDK's GraderValidateParams/RunParams). */
export const GraderValidateRequest = z.object({ grader: Grader }).meta({ id: 'GraderValidateRequest' });
export const GraderValidateResponse = z.object({ grader: Grader }).meta({ id: 'GraderValidateResponse' });
export const GraderRunRequest = z
  .object({
    grader: Grader,
    model_sample: z.string().max(1_000_000).describe('The answer graded: {{sample.output_text}}, and {{sample.output_json}} when it is JSON'),
    item: z.record(z.string().max(256), z.unknown()).optional().describe('The dataset line: {{item.<field>}}'),
  })
  .meta({ id: 'GraderRunRequest' });
const GraderRunErrors = z.object({
  formula_parse_error: z.boolean(),
  invalid_variable_error: z.boolean(),
  model_grader_parse_error: z.boolean(),
  model_grader_refusal_error: z.boolean(),
  model_grader_server_error: z.boolean(),
  model_grader_server_error_details: nullable(z.string()),
  other_error: z.boolean(),
  python_grader_runtime_error: z.boolean(),
  python_grader_runtime_error_details: nullable(z.string()),
  python_grader_server_error: z.boolean(),
  python_grader_server_error_type: nullable(z.string()),
  sample_parse_error: z.boolean(),
  truncated_observation_error: z.boolean(),
  unresponsive_reward_error: z.boolean(),
});
export const GraderRunResponse = z
  .object({
    reward: z.number(),
    metadata: z.object({
      errors: GraderRunErrors,
      execution_time: z.number().describe('Seconds the grading took'),
      name: z.string(),
      sampled_model_name: nullable(z.string()),
      scores: z.record(z.string(), z.unknown()).describe('Each sub-grader’s reward (multi), or the grader’s own'),
      token_usage: nullable(z.number().int()),
      type: z.string(),
    }),
    model_grader_token_usage_per_model: z.record(z.string(), z.unknown()),
    sub_rewards: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'GraderRunResponse' });
export type GraderRunResponse = z.infer<typeof GraderRunResponse>;

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

// --------------------------------------------------------------------------------------------- models

export const ModelObject = z
  .object({ id: z.string(), object: z.literal('model'), created: UnixSeconds, owned_by: z.string().describe('"system" for a base model, else the user id') })
  .meta({ id: 'ModelObject' });
export const ModelList = z.object({ object: z.literal('list'), data: z.array(ModelObject) }).meta({ id: 'ModelList' });
export const ModelDeleted = z.object({ id: z.string(), object: z.literal('model'), deleted: z.literal(true) }).meta({ id: 'ModelDeleted' });

// ----------------------------------------------------------------------------------------------- chat

const TextPart = z.object({ type: z.literal('text'), text: z.string() });
const MessageContent = z.union([z.string(), z.array(TextPart).min(1)]).describe('Text, or text parts (images are not accepted here)');
export const FunctionName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/).describe('1 to 64 letters, digits, _ or -');

export const ChatToolCall = z
  .object({
    id: z.string().min(1).describe('Answered by a tool message’s tool_call_id'),
    type: z.literal('function'),
    function: z.object({ name: z.string(), arguments: z.string().describe('The arguments: a JSON object in a string') }),
  })
  .meta({ id: 'ChatToolCall' });

export const ChatMessageInput = z.union([
  z.object({
    role: z.enum(['system', 'developer', 'user']).describe('developer is read as system'),
    content: MessageContent,
    name: z.string().optional(),
  }),
  z.object({
    role: z.literal('assistant'),
    content: nullable(MessageContent).optional().describe('May be null or left out when the turn has tool_calls'),
    name: z.string().optional(),
    tool_calls: z.array(ChatToolCall).min(1).optional().describe('The calls the assistant made in this turn'),
  }),
  z.object({
    role: z.literal('tool'),
    content: MessageContent.describe('The result of the call'),
    tool_call_id: z.string().min(1).describe('The id of the call (an earlier assistant turn’s tool_calls) it answers'),
  }),
]);

export const ChatTool = z
  .object({
    type: z.literal('function'),
    function: z.object({
      name: FunctionName,
      description: z.string().optional(),
      parameters: z.record(z.string(), z.unknown()).optional().describe('A JSON Schema object for the arguments'),
      strict: nullable(z.boolean()).optional(),
    }),
  })
  .meta({ id: 'ChatTool' });

export const ChatToolChoice = z
  .union([
    z.enum(['none', 'auto', 'required']).describe('none: answer in text; auto: the model decides; required: it calls a tool (enforced)'),
    z.object({ type: z.literal('function'), function: z.object({ name: FunctionName }) }).describe('Call this function (enforced)'),
  ])
  .meta({ id: 'ChatToolChoice' });

const Stop = z.union([z.string().min(1), z.array(z.string().min(1)).max(4)]);

export const ChatResponseFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({ name: z.string().min(1).max(64), schema: z.record(z.string(), z.unknown()).optional().describe(`A JSON Schema the answer follows, at most ${MAX_JSON_DEPTH} levels deep (as every JSON body)`), strict: nullable(z.boolean()).optional(), description: z.string().optional() }),
  }),
]);

export const ChatCompletionRequest = z
  .object({
    model: z.string().min(1).max(512).describe('A base model id, a fine_tuned_model, or a checkpoint’s fine_tuned_model_checkpoint'),
    messages: z.array(ChatMessageInput).min(1),
    max_tokens: nullable(boundedInt(1)).optional(),
    max_completion_tokens: nullable(boundedInt(1)).optional(),
    temperature: nullable(z.number().min(0).max(2)).optional().describe('Default 1, as OpenAI; 0 is greedy, and so is anything below 1e-4'),
    top_p: nullable(z.number().gt(0).max(1)).optional(),
    n: nullable(z.number().int().min(1).max(8)).optional(),
    stop: nullable(Stop).optional(),
    seed: nullable(z.number().int()).optional().describe('Sampling seed (any integer; the i-th of n answers uses seed + i)'),
    stream: nullable(z.boolean()).optional(),
    stream_options: nullable(z.object({ include_usage: z.boolean().optional() })).optional(),
    response_format: ChatResponseFormat.optional(),
    tools: z.array(ChatTool).min(1).max(128).optional().describe('Functions the model may call, written into the prompt by its own chat template (a template without tool support is a 400)'),
    tool_choice: ChatToolChoice.optional().describe('Default auto with tools; needs tools'),
    parallel_tool_calls: nullable(z.boolean()).optional().describe('false: at most one call per answer (default true)'),
    user: z.string().optional(),
    use_fast_engine: nullable(z.boolean())
      .optional()
      .describe('Our extension, as in POST /inference: true runs the model on llama.cpp (the default for text models), false on transformers (+PEFT), the only engine for vision models'),
  })
  .meta({ id: 'ChatCompletionRequest', examples: [{ model: 'ft:google/gemma-3-270m-it:support:job_0123456789abcdef01234567', messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 32 }] });
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

export const CompletionUsage = z.object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() });

export const ChatCompletion = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: UnixSeconds,
    model: z.string(),
    system_fingerprint: nullable(z.string()),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({
          role: z.literal('assistant'),
          content: nullable(z.string()).describe('null when the answer is only tool calls'),
          refusal: z.null(),
          tool_calls: z.array(ChatToolCall).min(1).optional().describe('The calls the model made, read from its family’s format'),
        }),
        finish_reason: z.enum(['stop', 'length', 'tool_calls']),
        logprobs: z.null(),
      }),
    ),
    usage: CompletionUsage,
  })
  .meta({ id: 'ChatCompletion' });
export type ChatCompletion = z.infer<typeof ChatCompletion>;

export const ChatCompletionChunk = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: UnixSeconds,
    model: z.string(),
    system_fingerprint: nullable(z.string()),
    choices: z.array(
      z.object({
        index: z.number().int(),
        delta: z.object({
          role: z.literal('assistant').optional(),
          content: z.string().optional(),
          tool_calls: z
            .array(
              z.object({
                index: z.number().int().min(0).describe('Which call of the answer this piece belongs to'),
                id: z.string().optional().describe('In the first piece of a call'),
                type: z.literal('function').optional(),
                function: z.object({ name: z.string().optional().describe('In the first piece of a call'), arguments: z.string().optional().describe('The next piece of the arguments’ JSON') }),
              }),
            )
            .optional(),
        }),
        finish_reason: nullable(z.enum(['stop', 'length', 'tool_calls'])),
        logprobs: z.null(),
      }),
    ),
    usage: nullable(CompletionUsage).optional(),
  })
  .meta({ id: 'ChatCompletionChunk' });
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunk>;

/** One server-sent event of a streamed chat completion, as its SSE fields carry it: `data` is a ChatCompletionChunk as
 *  one line of JSON, and `[DONE]` after the last (comments, `: preparing …`, say what a first use waits for). */
export const ChatCompletionStreamEvent = z
  .object({
    data: z.union([
      z.literal('[DONE]'),
      z.string().describe('A ChatCompletionChunk as one line of JSON').meta({ contentMediaType: 'application/json', contentSchema: contentSchemaOf(ChatCompletionChunk, { inline: true }) }),
    ]),
  })
  .meta({ id: 'ChatCompletionStreamEvent' });
