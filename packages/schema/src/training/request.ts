// The training request (POST /train): the job request with every hyperparameter of interface.md 2.12 (defaults are the
// sample values shown there), the export, evaluation and tracker settings, and the rules across them.
import { z } from 'zod';
import { GgufQuantization, HubRepoId } from '../artifacts.ts';
import { boundedInt, CheckpointStep, documentedRules, Identifier, Modality, Secret } from '../common.ts';
import { trainRequest } from '../examples.ts';
import { Grader, graderProblems, SampleResponseFormat } from '../graders.ts';
import { settingApplies, type SettingScope } from '../setting-scope.ts';
import { TrainerType, TrainingMethod } from '../trainers.ts';
import { RewardConfig } from './rewards.ts';

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
/** loss_type's values by trainer (`x-loss-types` in the OpenAPI document; the core reads them there). */
const LOSSES = { grpo: GRPO_LOSS_TYPES, dpo: DPO_LOSS_TYPES } as const;
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
    learning_rate: z.number().positive().default(0.0002).describe('Peak learning rate'),
    batch_size: boundedInt(1, 4096).default(2).describe('Per-device batch size'),
    gradient_accumulation_steps: boundedInt(1, 4096).default(4).describe('Micro-batches per optimizer step'),
    epochs: boundedInt(1, 10_000).default(3).describe('Passes over the train split (max_steps > 0 overrides it)'),
    max_steps: boundedInt(-1).default(-1).describe('-1: train for `epochs`; otherwise stop after this many steps'),
    packing: z.boolean().default(false).describe('Pack several short examples into one sequence').meta(onlyFor('sft')),
    padding_free: z.boolean().default(false).describe('Concatenate the batch without padding (exact across sequence boundaries with a flash-attention kernel; on the CPU it uses position ids)').meta(onlyFor('sft', 'dpo')),
    use_fast_attention: z.boolean().default(false).describe('Use the best attention kernel the hardware has'),
    max_length: boundedInt(1, 1 << 20)
      .optional()
      .describe(`Tokens per example, prompt and answer together; must fit the base model's context (else 422). Default ${DEFAULT_MAX_LENGTH}, or the base model's context when that is shorter`),
    lr_scheduler_type: LrSchedulerType.default('linear').describe('The learning rate schedule (transformers’ scheduler names)'),
    save_strategy: IntervalStrategy.default('epoch').describe('When checkpoints are saved (steps: every save_steps)'),
    save_steps: boundedInt(1).optional().describe('save_strategy steps: save every this many steps (default logging_steps × 10)'),
    logging_steps: boundedInt(1).default(10).describe('A progress event every this many steps'),
    lora_rank: boundedInt(1, 4096).default(16).describe('LoRA rank r').meta(LORA_METHODS),
    lora_alpha: boundedInt(1, 65_536).default(16).describe('LoRA alpha (scaling = alpha / r)').meta(LORA_METHODS),
    lora_dropout: Fraction.default(0.05).describe('Dropout on the LoRA branch').meta(LORA_METHODS),
    max_prompt_length: boundedInt(1, 1 << 20).default(512).describe('dpo, orpo, grpo: tokens kept of the prompt').meta(onlyFor('dpo', 'orpo', 'grpo')),
    num_generations: boundedInt(2, 1024).default(4).describe('grpo: completions per prompt that are compared').meta(onlyFor('grpo')),
    max_completion_length: boundedInt(1, 1 << 20).default(64).describe('grpo: tokens sampled per completion').meta(onlyFor('grpo')),
    max_grad_norm: z.number().positive().default(0.1).describe('Gradient clipping norm'),
    adam_beta1: Fraction.default(0.9).describe('AdamW beta1'),
    adam_beta2: Fraction.default(0.99).describe('AdamW beta2'),
    warmup_ratio: z.number().min(0).max(1).default(0.1).describe('Share of the steps spent warming the learning rate up'),
    beta: z.number().min(0).default(0.1).describe('dpo/orpo preference strength; grpo KL weight (0 turns KL off)').meta(onlyFor('dpo', 'orpo', 'grpo')),
    seed: boundedInt(0).default(42).describe('Random seed: data order, LoRA initialisation, sampling'),
    // The trainers' own loss and sampling knobs (decisions.md); left out, TRL's default applies.
    loss_type: z.enum([...GRPO_LOSS_TYPES, ...DPO_LOSS_TYPES]).optional().describe(`grpo: ${GRPO_LOSS_TYPES.join(', ')} (default dapo); dpo: ${DPO_LOSS_TYPES.join(', ')} (default sigmoid)`).meta({ ...onlyFor('dpo', 'grpo'), 'x-loss-types': LOSSES }),
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
  eval_steps: boundedInt(1).default(50).describe('eval_strategy steps: evaluate every this many steps'),
  compute_eval_metrics: z.boolean().default(false).describe('The evaluations during training also report perplexity and assistant-token accuracy'),
  batch_eval_metrics: z.boolean().default(false).describe('Compute the evaluation metrics batch by batch (less memory on a big test split)'),
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
    .describe('Lower is better for a loss (…loss), higher for anything else; valid_score (with graders) is the graders’ mean'),
  graders: z
    .array(Grader)
    .min(1)
    .max(8)
    .optional()
    .describe(
      'At each evaluation, the model answers the test split’s prompts and these graders (the objects /v1 graders and POST /evaluation take) score them: ' +
        'valid_score (the mean of the graders’ means, as OpenAI reports valid_mean_reward) and valid_score/<name> in the job’s metrics; metric_for_best valid_score keeps the best-scoring step',
    ),
  grader_samples: boundedInt(1, 1000).default(32).describe('graders: test rows answered and scored at each evaluation (the first ones)'),
  grader_max_new_tokens: boundedInt(1, 4096).default(256).describe('graders: tokens per answer at most'),
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
    if (config.eval_config.graders && !evaluating) {
      ctx.addIssue({ code: 'custom', path: ['eval_config', 'graders'], message: 'graders score the test split at each evaluation: set eval_strategy to steps or epoch' });
    }
    if (/^(eval_)?valid_score/.test(config.eval_config.metric_for_best) && !config.eval_config.graders) {
      ctx.addIssue({ code: 'custom', path: ['eval_config', 'metric_for_best'], message: 'metric_for_best valid_score is the graders’ score: send eval_config.graders' });
    }
    const graderNames = new Set<string>();
    config.eval_config.graders?.forEach((grader, index) => {
      if (graderNames.has(grader.name)) {
        ctx.addIssue({ code: 'custom', path: ['eval_config', 'graders', index, 'name'], message: `grader name ${grader.name} is used twice` });
      }
      graderNames.add(grader.name);
    });
    for (const key of ['early_stopping_patience', 'load_best_model_at_end'] as const) {
      if (config.eval_config[key] && !evaluating) {
        ctx.addIssue({ code: 'custom', path: ['eval_config', key], message: `${key} needs evaluations: set eval_strategy to steps or epoch` });
      }
    }
    const loss = config.hyperparameters.loss_type;
    const losses: readonly string[] | undefined = LOSSES[config.trainer_type as keyof typeof LOSSES];
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

/** A stored job's training_config as it was read back: the request's fields with their defaults (a row written before
 *  a field existed gets its default; a legacy row without trainer_type is sft), unknown keys dropped, and none of the
 *  request's rules across fields (they held when the job was submitted). */
const StoredTrainingConfig = z.object({
  ...TrainingConfig.shape,
  hyperparameters: z.object(Hyperparameters.shape).prefault({}),
  export_config: z.object(TrainingExportConfig.shape).prefault({}),
  eval_config: z.object(EvalConfig.shape).prefault({}),
  tracker_config: z.object(TrackerConfig.shape).optional(),
});
const parsedConfigs = new WeakMap<object, TrainingConfig>();

/** The one reading of a stored training_config (a job's row, or a dry run's queued payload), in every process and
 *  presenter: parsed once per object read, then remembered. `base` is the base_model_id a row keeps in its own
 *  column. One that does not parse throws, naming `whose` and the field. */
export function storedTrainingConfig(stored: Record<string, unknown>, whose: string, base?: string): TrainingConfig {
  const known = parsedConfigs.get(stored);
  if (known) return known;
  const parsed = StoredTrainingConfig.safeParse(base === undefined ? stored : { base_model_id: base, ...stored });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`the stored training_config of ${whose} does not parse at ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  parsedConfigs.set(stored, parsed.data);
  return parsed.data;
}

/** A job's training_config, parsed (storedTrainingConfig); its row's base_model_id stands in for a config without one. */
export const jobConfig = (job: { training_config: Record<string, unknown>; job_id?: string; base_model_id?: string }): TrainingConfig =>
  storedTrainingConfig(job.training_config, job.job_id ? `job ${job.job_id}` : 'a job', job.base_model_id);

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
