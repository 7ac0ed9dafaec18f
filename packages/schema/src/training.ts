// Training service schemas: the job request with every hyperparameter of interface.md 2.12 (defaults
// are the sample values shown there) and the job status resource; GRPO's rewards and the pre-flight report have
// their own files.
import { z } from 'zod';
import { ArtifactGroups, ExportRecord, GgufQuantization, HubRepoId } from './artifacts.ts';
import { boundedInt, CheckpointStep, contentSchemaOf, documentedRules, Identifier, Modality, Secret, Timestamp, maybe } from './common.ts';
import { trainRequest } from './examples.ts';
import { graderProblems, SampleResponseFormat } from './graders.ts';
import { PreflightReport } from './preflight-report.ts';
import { RewardConfig } from './rewards.ts';
import { settingApplies, type SettingScope } from './setting-scope.ts';
import { TrainerType, TrainingMethod } from './trainers.ts';

/** The scheduler names transformers accepts, so a typo fails at submit rather than in the worker. */
export const LrSchedulerType = z.enum([
  'linear',
  'cosine',
  'cosine_with_restarts',
  'polynomial',
  'constant',
  'constant_with_warmup',
  'inverse_sqrt',
  'reduce_lr_on_plateau',
  'cosine_with_min_lr',
  'cosine_warmup_with_min_lr',
  'warmup_stable_decay',
]);

const IntervalStrategy = z.enum(['no', 'steps', 'epoch']);
/** The losses each trainer takes (TRL 0.24): loss_type's allowed values depend on trainer_type. */
export const GRPO_LOSS_TYPES = ['grpo', 'dr_grpo', 'dapo', 'bnpo'] as const;
export const DPO_LOSS_TYPES = ['sigmoid', 'hinge', 'ipo', 'exo_pair', 'nca_pair', 'robust', 'bco_pair', 'sppo_hard', 'aot', 'aot_pair', 'discopop', 'apo_zero', 'apo_down', 'sft'] as const;
const LOSSES: Record<string, readonly string[]> = { grpo: GRPO_LOSS_TYPES, dpo: DPO_LOSS_TYPES };
/** max_length when a request names none (interface.md 2.12), cut to the base model's context at submit. */
export const DEFAULT_MAX_LENGTH = 1024;
const Fraction = z.number().min(0).lt(1);

/** A setting that only some trainers read (`x-trainers` in the OpenAPI document): the one statement of it, which the
 *  applied config, the console's launch form and the core's notes (held to it by a test) all follow. */
const onlyFor = (...trainers: Array<'sft' | 'dpo' | 'orpo' | 'grpo'>) => ({ 'x-trainers': trainers });
/** A setting only the LoRA methods read (`x-methods`): Full training has no adapter. */
const LORA_METHODS = { 'x-methods': ['LoRA', 'QLoRA'] };

export const Hyperparameters = z
  .strictObject({
    learning_rate: z.number().positive().default(0.0002),
    batch_size: boundedInt(1, 4096).default(2).describe('Per-device batch size'),
    gradient_accumulation_steps: boundedInt(1, 4096).default(4),
    epochs: boundedInt(1, 10_000).default(3),
    max_steps: boundedInt(-1).default(-1).describe('-1: train for `epochs`; otherwise stop after this many steps'),
    packing: z.boolean().default(false).describe('Pack several short examples into one sequence').meta(onlyFor('sft')),
    padding_free: z.boolean().default(false).meta(onlyFor('sft', 'dpo')),
    use_fast_attention: z.boolean().default(false).describe('Use the best attention kernel the hardware has'),
    max_length: boundedInt(1, 1 << 20)
      .optional()
      .describe(`Tokens per example, prompt and answer together; must fit the base model's context (else 422). Default ${DEFAULT_MAX_LENGTH}, or the base model's context when that is shorter`),
    lr_scheduler_type: LrSchedulerType.default('linear'),
    save_strategy: IntervalStrategy.default('epoch'),
    save_steps: boundedInt(1).optional().describe('save_strategy steps: save every this many steps (default logging_steps × 10)'),
    logging_steps: boundedInt(1).default(10),
    lora_rank: boundedInt(1, 4096).default(16).meta(LORA_METHODS),
    lora_alpha: boundedInt(1, 65_536).default(16).meta(LORA_METHODS),
    lora_dropout: Fraction.default(0.05).meta(LORA_METHODS),
    max_prompt_length: boundedInt(1, 1 << 20).default(512).describe('dpo, orpo, grpo: tokens kept of the prompt').meta(onlyFor('dpo', 'orpo', 'grpo')),
    num_generations: boundedInt(2, 1024).default(4).describe('grpo: completions per prompt that are compared').meta(onlyFor('grpo')),
    max_completion_length: boundedInt(1, 1 << 20).default(64).describe('grpo: tokens sampled per completion').meta(onlyFor('grpo')),
    max_grad_norm: z.number().positive().default(0.1),
    adam_beta1: Fraction.default(0.9),
    adam_beta2: Fraction.default(0.99),
    warmup_ratio: z.number().min(0).max(1).default(0.1),
    beta: z.number().min(0).default(0.1).describe('dpo/orpo preference strength; grpo KL weight (0 turns KL off)').meta(onlyFor('dpo', 'orpo', 'grpo')),
    seed: boundedInt(0).default(42).describe('Random seed: data order, LoRA initialisation, sampling'),
    // The trainers' own loss and sampling knobs (decisions.md); left out, TRL's default applies.
    loss_type: z.enum([...GRPO_LOSS_TYPES, ...DPO_LOSS_TYPES]).optional().describe(`grpo: ${GRPO_LOSS_TYPES.join(', ')} (default dapo); dpo: ${DPO_LOSS_TYPES.join(', ')} (default sigmoid)`).meta(onlyFor('dpo', 'grpo')),
    importance_sampling_level: z.enum(['token', 'sequence']).optional().describe('grpo: importance ratios per token, or per sequence (GSPO)').meta(onlyFor('grpo')),
    epsilon: z.number().positive().max(1).optional().describe('grpo: lower clipping bound of the ratio (default 0.2)').meta(onlyFor('grpo')),
    epsilon_high: z.number().positive().max(10).optional().describe('grpo: upper clipping bound (default epsilon; DAPO recommends 0.28)').meta(onlyFor('grpo')),
    scale_rewards: z.enum(['group', 'batch', 'none']).optional().describe('grpo: advantages scaled by the group’s reward std (default), the batch’s, or not at all (Dr. GRPO)').meta(onlyFor('grpo')),
    mask_truncated_completions: z.boolean().optional().describe('grpo: completions cut at max_completion_length take no part in the loss').meta(onlyFor('grpo')),
    temperature: z.number().positive().max(10).optional().describe('grpo: sampling temperature of the answers compared (default 1.0); higher makes them differ more').meta(onlyFor('grpo')),
    equal_reward_steps: boundedInt(0, 1_000_000)
      .default(4)
      .describe('grpo: the job warns when every prompt’s answers all scored the same in each of its first this many steps (GRPO learns nothing then); 0: never').meta(onlyFor('grpo')),
    rpo_alpha: z.number().min(0).max(100).optional().describe('dpo: weight of the chosen answers’ likelihood added to the loss (RPO); teaches the model to end its turn').meta(onlyFor('dpo')),
  })
  .meta({ id: 'Hyperparameters', description: 'Every field is applied; defaults are the interface’s sample values' });
export type Hyperparameters = z.infer<typeof Hyperparameters>;

/** Whether a run of this trainer and method reads the hyperparameter (its `x-trainers` / `x-methods`). */
export function hyperparameterApplies(name: string, trainer: string, method: string | undefined): boolean {
  const field = (Hyperparameters.shape as Record<string, z.ZodType>)[name];
  return settingApplies(field?.meta() as SettingScope | undefined, trainer, method);
}

export const TrainingExportConfig = z
  .strictObject({
    format: z.enum(['adapter', 'merged']).default('adapter').describe('Full training always writes merged'),
    destination: z
      .enum(['cloud', 'hub'])
      .default('cloud')
      .describe('cloud: blob storage; hub: also published to hub_repo_id when the job completes (as exports, see latest_export; needs hub_token)'),
    hub_repo_id: HubRepoId.optional().describe('Required when destination is hub'),
    include_gguf: z.boolean().default(false),
    gguf_quantization: GgufQuantization.default('q8_0'),
  })
  .superRefine((config, ctx) => {
    if (config.destination === 'hub' && !config.hub_repo_id) {
      ctx.addIssue({ code: 'custom', path: ['hub_repo_id'], message: 'hub_repo_id is required when destination is hub', params: { type: 'missing' } });
    }
  })
  .describe('What the job writes when it ends')
  .meta(documentedRules({ when: { required: ['destination'], properties: { destination: { const: 'hub' } } }, then: { required: ['hub_repo_id'], properties: { hub_repo_id: { minLength: 1 } } } }));

export const EvalConfig = z.strictObject({
  eval_strategy: IntervalStrategy.default('no').describe('steps or epoch need a test split'),
  eval_steps: boundedInt(1).default(50),
  compute_eval_metrics: z.boolean().default(false),
  batch_eval_metrics: z.boolean().default(false),
  early_stopping_patience: boundedInt(1)
    .optional()
    .describe('Stop when metric_for_best has not improved for this many evaluations (needs eval_strategy steps or epoch)'),
  load_best_model_at_end: z
    .boolean()
    .default(false)
    .describe('Keep the checkpoint with the best metric_for_best as the job’s model (checkpoints are saved at each evaluation); best_step says which'),
  metric_for_best: z
    .string()
    .regex(/^(eval_)?[a-z][a-z0-9_]*$/, 'a metric the evaluation reports, e.g. eval_loss or eval_accuracy')
    .default('eval_loss')
    .describe('Lower is better for a loss (…loss), higher for anything else'),
});

export const TrackerConfig = z.strictObject({
  provider: z.enum(['mlflow', 'wandb']).optional().describe('Default mlflow when MLFLOW_TRACKING_URI is set'),
  api_key: Secret.optional().describe('Experiment-tracker credential; never stored'),
  project: z.string().optional().describe('Tracker project (mlflow experiment or wandb project)'),
  log_model: z.enum(['false', 'checkpoint', 'end']).default('end'),
});

export const TrainingConfig = z
  .strictObject({
    base_model_id: z.string().min(1).describe('Hub model id (owner/name) or a name in the local model store'),
    provider: z.enum(['hub', 'local']).default('hub'),
    method: TrainingMethod.default('QLoRA'),
    trainer_type: TrainerType.default('sft'),
    modality: Modality.default('text'),
    hyperparameters: Hyperparameters.prefault({}),
    export_config: TrainingExportConfig.prefault({}),
    eval_config: EvalConfig.prefault({}),
    tracker_config: TrackerConfig.optional().describe('Absent: the job page of the training service is the tracker'),
    reward_config: z.array(RewardConfig).optional().describe('Reward functions; required by grpo, ignored by the other trainers'),
    response_format: SampleResponseFormat.optional().describe('grpo: a JSON Schema every sampled answer follows (constrained sampling), read by rewards as {{sample.output_json.<field>}}'),
    resume_on_restart: z
      .boolean()
      .default(false)
      .describe('If the worker stops mid-run (crash, restart), continue from the last checkpoint instead of failing the job'),
    from_job: Identifier.optional().describe('Continue training from this job’s model (its adapter, or its weights for Full); same base_model_id'),
    from_checkpoint_step: CheckpointStep.optional().describe('With from_job: start from this checkpoint of it instead of its final model'),
  })
  .superRefine((config, ctx) => {
    if (config.from_checkpoint_step !== undefined && config.from_job === undefined) {
      ctx.addIssue({ code: 'custom', path: ['from_checkpoint_step'], message: 'from_checkpoint_step names a checkpoint of from_job; send from_job too', params: { type: 'missing' } });
    }
    const evaluating = config.eval_config.eval_strategy !== 'no';
    for (const key of ['early_stopping_patience', 'load_best_model_at_end'] as const) {
      if (config.eval_config[key] && !evaluating) {
        ctx.addIssue({ code: 'custom', path: ['eval_config', key], message: `${key} needs evaluations: set eval_strategy to steps or epoch` });
      }
    }
    const loss = config.hyperparameters.loss_type;
    const losses = LOSSES[config.trainer_type];
    if (loss !== undefined && !losses?.includes(loss)) {
      ctx.addIssue({
        code: 'custom',
        path: ['hyperparameters', 'loss_type'],
        message: losses ? `loss_type ${loss} is not a ${config.trainer_type} loss; use one of ${losses.join(', ')}` : `loss_type applies to grpo and dpo; leave it out for ${config.trainer_type}`,
        params: { type: 'invalid_value' },
      });
    }
    // Other trainers ignore reward_config: the interface's own sample sends one with trainer_type sft.
    if (config.trainer_type === 'grpo' && (config.reward_config ?? []).length === 0) {
      ctx.addIssue({ code: 'custom', path: ['reward_config'], message: 'trainer_type grpo needs at least one reward in reward_config', params: { type: 'missing' } });
    }
    if (config.response_format && config.trainer_type !== 'grpo') {
      ctx.addIssue({ code: 'custom', path: ['response_format'], message: `response_format applies to grpo only (what its sampled answers follow); leave it out for ${config.trainer_type}`, params: { type: 'invalid_value' } });
    }
    const seen = new Set<string>();
    config.reward_config?.forEach((reward, index) => {
      if (seen.has(reward.name)) {
        ctx.addIssue({ code: 'custom', path: ['reward_config', index, 'name'], message: `reward name ${reward.name} is used twice` });
      }
      seen.add(reward.name);
      for (const problem of graderProblems(reward)) {
        ctx.addIssue({ code: 'custom', path: ['reward_config', index, ...problem.path], message: problem.message, ...(problem.type ? { params: { type: problem.type } } : {}) });
      }
      if (reward.type === 'label_model') {
        reward.passing_labels.forEach((label, labelIndex) => {
          if (!reward.labels.includes(label)) {
            ctx.addIssue({ code: 'custom', path: ['reward_config', index, 'passing_labels', labelIndex], message: `passing label ${label} is not one of labels` });
          }
        });
      }
    });
  })
  .meta({
    id: 'TrainingConfig',
    // Reward names being unique, passing_labels being among labels, graders' templates naming variables and multi's
    // formula naming its graders are checked too; JSON Schema cannot say any of them.
    ...documentedRules(
      { when: { required: ['from_checkpoint_step'] }, then: { required: ['from_job'] } },
      {
        when: { properties: { eval_config: { properties: { eval_strategy: { const: 'no' } } } } },
        then: { properties: { eval_config: { properties: { early_stopping_patience: false, load_best_model_at_end: { const: false } } } } },
      },
      { when: { required: ['trainer_type'], properties: { trainer_type: { const: 'grpo' } } }, then: { required: ['reward_config'], properties: { reward_config: { minItems: 1 } } } },
      ...Object.entries(LOSSES).map(([trainer, losses]) => ({
        when: { required: ['trainer_type'], properties: { trainer_type: { const: trainer } } },
        then: { properties: { hyperparameters: { properties: { loss_type: { enum: [...losses] } } } } },
      })),
      {
        when: { properties: { trainer_type: { enum: ['sft', 'orpo'] } } },
        then: { properties: { hyperparameters: { properties: { loss_type: false } } } },
      },
      { when: { properties: { trainer_type: { enum: ['sft', 'dpo', 'orpo'] } } }, then: { properties: { response_format: false } } },
    ),
  });
export type TrainingConfig = z.infer<typeof TrainingConfig>;

export const TrainRequest = z
  .strictObject({
    processed_dataset_id: Identifier.describe('Processed dataset to train on'),
    hub_token: Secret.optional().describe('Model-hub credential; reaches the worker through its environment, never stored'),
    training_config: TrainingConfig,
    job_name: z.string().min(1).max(200).default('unnamed job'),
    dry_run: z
      .boolean()
      .default(false)
      .describe('Answer with the pre-flight report (tokens, truncation, steps, time and memory estimates, warnings) and create no job'),
  })
  .meta({
    id: 'TrainRequest',
    description: 'Start a fine-tuning job',
    // interface.md's sample, on LoRA: its QLoRA needs a CUDA worker, LoRA runs on any.
    examples: [{ ...trainRequest, training_config: { ...trainRequest.training_config, method: 'LoRA' } }],
  });
export type TrainRequest = z.infer<typeof TrainRequest>;

// ---------------------------------------------------------------------------------------------
// Responses

export const TrainResponse = z.object({ job_id: Identifier }).meta({ id: 'TrainResponse' });
export type TrainResponse = z.infer<typeof TrainResponse>;

export const JobStatus = z
  .enum(['queued', 'preparing', 'training', 'paused', 'completed', 'failed'])
  .describe('queued → preparing → training → completed | failed; cancel and worker loss also end in failed; paused (POST /jobs/{id}/pause) until resumed, then queued again');
export type JobStatus = z.infer<typeof JobStatus>;

export const JobProgress = z
  .object({
    step: z.number().int().nonnegative(),
    total_steps: maybe(z.number().int().nonnegative()),
    epoch: maybe(z.number().nonnegative()),
    loss: maybe(z.number()),
    eta_seconds: maybe(z.number().nonnegative()),
    reward: maybe(z.number()).describe('grpo: the mean reward of the last logged step (its loss stays near 0 by construction: the reward is the figure to watch)'),
  })
  .meta({ id: 'JobProgress' });
export type JobProgress = z.infer<typeof JobProgress>;

export const JobMetrics = z
  .object({
    eval_loss: maybe(z.number()),
    perplexity: maybe(z.number()).describe('exp(eval_loss)'),
    accuracy: maybe(z.number()).describe('Next-token accuracy on assistant tokens'),
    eval_runtime: maybe(z.number()).describe('Seconds'),
    reward: maybe(z.number()).describe('grpo: the mean reward of its last logged training step (a prompt-only split has no answers to measure a loss on)'),
  })
  .describe('Evaluation after training, on the test split (or the last 5% of train)');

export const TrainingJob = z
  .object({
    job_id: Identifier,
    job_name: z.string(),
    status: JobStatus,
    modality: Modality,
    tracker_url: maybe(z.string()).describe('Tracker run, or this job’s dashboard page'),
    processed_dataset_id: maybe(Identifier).describe('Null for a /v1 fine-tuning job whose training file failed validation (no dataset was made)'),
    adapter_path: maybe(z.string()),
    base_model_id: z.string(),
    gguf_path: maybe(z.string()),
    metrics: maybe(JobMetrics),
    error: maybe(z.string()).describe('Why the job failed'),
    created_at: Timestamp,
    updated_at: Timestamp.describe('When the job itself last changed (its status, progress, results); an export of it is its own record and leaves this as it is'),
    started_at: maybe(Timestamp).describe('When a worker took the job (null while it waits)'),
    finished_at: maybe(Timestamp).describe('When it completed or failed (null while it waits or runs): a run took finished_at − started_at'),
    jobs_ahead: maybe(z.number().int().min(0)).describe('While queued: how many queued jobs (any user’s) were submitted before it and go first; null otherwise'),
    progress: maybe(JobProgress),
    artifacts: ArtifactGroups,
    latest_export: maybe(ExportRecord),
    parent: maybe(z.object({ job_id: Identifier, checkpoint_step: maybe(z.number().int().positive()) })).describe('The job (and checkpoint) this one continued from'),
    best_step: maybe(z.number().int().positive()).describe('load_best_model_at_end: the step whose weights the job kept'),
    preflight: maybe(PreflightReport).describe('The pre-flight report of this run, made by its worker before training'),
    training_config: z.record(z.string(), z.unknown()).describe('The training_config the job runs with: defaults filled in, secrets (tracker api_key) and the settings its trainer and method do not read left out, and with max_steps set, epochs is the passes over the train split those steps make'),
  })
  .meta({ id: 'TrainingJob', description: 'A training job and what it produced' });
export type TrainingJob = z.infer<typeof TrainingJob>;

export const JobList = z
  .object({ jobs: z.array(TrainingJob).describe('The caller’s jobs, newest first') })
  .meta({ id: 'JobList' });
export type JobList = z.infer<typeof JobList>;

export const JobDeleteResult = z
  .object({
    job_id: Identifier,
    deleted: z.boolean(),
    message: z.string(),
    deleted_resources: z.array(z.string()).describe('Row, config, checkpoints, adapter, merged model, GGUF and exports removed'),
  })
  .meta({ id: 'JobDeleteResult' });
export type JobDeleteResult = z.infer<typeof JobDeleteResult>;

export const JobParams = z.object({ job_id: Identifier.describe('From POST /train') });

// ---------------------------------------------------------------------------------------------
// GET /jobs/{id}/events: what each server-sent event carries

/** When an event of the log was recorded: every event but `end` carries it. */
const recordedAt = { created_at: Timestamp.describe('When the event was recorded') };

/** The `data` (JSON) of each kind of event in a job's stream. */
export const JobEventData = {
  status: z.object({ status: JobStatus, error: z.string().optional(), ...recordedAt }).describe('The job moved to this status'),
  progress: JobProgress.extend({
    ...recordedAt,
    learning_rate: maybe(z.number()),
    tokens_per_second: maybe(z.number()),
    extra: z.record(z.string(), z.number()).optional().describe("The trainer's other figures (token accuracy, trained tokens, …)"),
  }).describe('A logged training step'),
  metrics: z
    .object({ step: z.number().int().nonnegative(), final: z.boolean().optional(), ...recordedAt })
    .catchall(maybe(z.number()))
    .describe('An evaluation: eval_loss, perplexity, accuracy, eval_runtime and any other eval_… figure'),
  log: z
    .object({
      level: z.enum(['info', 'warning', 'error']),
      message: z.string(),
      about: z.literal('model').optional().describe("model: a note on the job's model (a conversion, a download), not on its training"),
      ...recordedAt,
    })
    .describe('Something the job should say: a warning, a retry, a re-queue or resume, a model being prepared'),
  end: z.union([TrainingJob, z.object({ job_id: Identifier, deleted: z.literal(true) })]).describe('The last event: the final job (or that it was deleted)'),
} as const;

const EventSeq = z.string().regex(/^\d+$/).describe('Sequence number; send it back as Last-Event-ID to resume after it');

/** One event of the stream as its SSE fields carry it (OpenAPI 3.2 calls this the stream's item schema; schemathesis
 *  checks every event against it): `event` the kind, `id` its sequence number, `data` one line of JSON
 *  whose shape the kind decides (its contentSchema). */
export const JobStreamEvent = z
  .union(
    Object.entries(JobEventData).map(([kind, data]) =>
      z
        .object({
          event: z.literal(kind),
          // `end` sends no id of its own; an SSE reader carries the last one over to it (the stream's last event id).
          id: kind === 'end' ? EventSeq.optional() : EventSeq,
          data: z.string().describe(`${data.description ?? kind}: one line of JSON (contentSchema)`).meta({ contentMediaType: 'application/json', contentSchema: contentSchemaOf(data) }),
        })
        .describe(data.description ?? kind),
    ) as unknown as [z.ZodObject, z.ZodObject, ...z.ZodObject[]],
  )
  .meta({ id: 'JobStreamEvent', description: 'One server-sent event of GET /jobs/{id}/events; the stream is a sequence of them, with `:` comments as heartbeats' });

// ---------------------------------------------------------------------------------------------
// Checkpoints (decisions.md "Checkpoints, pre-flight, continuation")

export const Checkpoint = z
  .object({
    step: z.number().int().positive(),
    epoch: maybe(z.number().nonnegative()),
    train_loss: maybe(z.number()).describe('The last training loss logged up to this step'),
    eval_loss: maybe(z.number()).describe('When the job evaluated at this step'),
    created_at: Timestamp,
    size_bytes: z.number().int().nonnegative().describe('Adapter (or weights) and the state to resume from'),
  })
  .meta({ id: 'Checkpoint' });
export type Checkpoint = z.infer<typeof Checkpoint>;

export const CheckpointList = z
  .object({ checkpoints: z.array(Checkpoint).describe('Oldest first; the core keeps the newest few (and the best, with load_best_model_at_end)') })
  .meta({ id: 'CheckpointList' });
export type CheckpointList = z.infer<typeof CheckpointList>;

// ---------------------------------------------------------------------------------------------
// Workers (decisions.md "Scaled out, workers and secrets")

export const WorkerDevice = z
  .object({
    kind: z.enum(['cuda', 'cpu']),
    name: z.string(),
    memory_bytes: z.number().int().nonnegative().describe('GPU memory for cuda, RAM for cpu'),
  })
  .meta({ id: 'WorkerDevice' });

export const WorkerInfo = z
  .object({
    worker_id: Identifier,
    host: z.string(),
    pid: z.number().int().describe('Its process id on that host'),
    devices: z.array(WorkerDevice),
    queues: z.array(z.string()).describe('The queues it serves: train, export, infer, evaluate'),
    current_job_id: maybe(z.string()).describe('The work it took first of what it holds now (a job, export or request id)'),
    current_jobs: z.array(z.string()).describe('Everything it is working on now'),
    preparing: z
      .object({
        job_id: maybe(z.string()).describe('The completed job whose model it is converting for chat now (GGUF for the fast engine)'),
        waiting: z.array(z.string()).describe('Completed jobs waiting their turn, next first (the order they completed in)'),
      })
      .describe('Models of completed jobs it prepares for chat after training, one at a time; a deleted job is skipped')
      .meta({ id: 'WorkerPreparing' }),
    started_at: Timestamp,
    last_seen_at: Timestamp.describe('Its last heartbeat; a worker silent for WORKER_TIMEOUT_S is gone'),
  })
  .meta({ id: 'WorkerInfo', description: 'A live worker' });
export type WorkerInfo = z.infer<typeof WorkerInfo>;

export const QueueLane = z
  .object({
    name: z.string().describe('train, export, infer, evaluate, preflight or augment'),
    waiting: z.number().int().nonnegative().describe('Entries no worker has taken yet'),
    active: z.number().int().nonnegative().describe('Entries a worker is working on'),
    oldest_waiting_seconds: z.number().nonnegative().describe('How long the oldest waiting entry has waited (0: none waits)'),
    workers: z.number().int().nonnegative().describe('Live workers that serve this lane'),
  })
  .meta({ id: 'QueueLane', description: 'A queue lane now: the numbers its metrics carry (bullmq_job_count, ftp_queue_oldest_waiting_seconds, ftp_workers_alive)' });
export type QueueLane = z.infer<typeof QueueLane>;

export const WorkerList = z
  .object({
    workers: z.array(WorkerInfo).describe('Live workers, oldest first'),
    queues: z.array(QueueLane).describe('Every queue lane: what waits, what runs, and who serves it'),
  })
  .meta({ id: 'WorkerList' });
export type WorkerList = z.infer<typeof WorkerList>;
