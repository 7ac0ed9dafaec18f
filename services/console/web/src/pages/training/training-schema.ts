// The training request's fields as the training service documents them (openapi/training.json, generated from the
// zod schemas the service validates with): every hyperparameter of interface.md 2.12, eval, export and tracker
// settings, with their defaults, limits and descriptions. The launch form is drawn from these, so it never lags the API.
import trainingDocument from '../../../../../../openapi/training.json' with { type: 'json' };
import { settingApplies, type SettingScope } from '../../../../../../packages/schema/src/setting-scope.ts';

const { components } = trainingDocument;

export interface FieldSchema extends SettingScope {
  type?: string;
  enum?: readonly string[];
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  /** trainer_type: the processing_mode each trainer's dataset has. */
  'x-dataset-modes'?: Record<string, string>;
}

export type ObjectSchema = Record<string, FieldSchema>;

const trainingConfig = components.schemas.TrainingConfig.properties;

export const HYPERPARAMETERS = components.schemas.Hyperparameters.properties as unknown as ObjectSchema;
export const EVAL_CONFIG = trainingConfig.eval_config.properties as unknown as ObjectSchema;
export const EXPORT_CONFIG = trainingConfig.export_config.properties as unknown as ObjectSchema;
export const TRACKER_CONFIG = trainingConfig.tracker_config.properties as unknown as ObjectSchema;
export const TRAINING_FIELDS = trainingConfig as unknown as ObjectSchema;

/** Each field's documented default (fields without one are left out: the service decides). */
export function defaultsOf(schema: ObjectSchema): Record<string, unknown> {
  return Object.fromEntries(Object.entries(schema).flatMap(([name, field]) => (field.default === undefined ? [] : [[name, field.default]])));
}

/** The fields a run of this trainer and method reads (the schema's `x-trainers` / `x-methods`): an SFT job is shown
 *  and sends no DPO or GRPO setting (#54: its log said "max_prompt_length … not used by sft"). */
export function fieldsFor(schema: ObjectSchema, trainer: string, method: string): ObjectSchema {
  return Object.fromEntries(Object.entries(schema).filter(([, field]) => settingApplies(field, trainer, method)));
}

/** The values to send: fields the schema does not have and empty ones dropped, numbers typed in as text made numbers. */
export function cleanValues(schema: ObjectSchema, values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(values).flatMap(([name, value]) => {
      if (!(name in schema) || value === '' || value === undefined || value === null) return [];
      const type = schema[name]?.type;
      if ((type === 'number' || type === 'integer') && typeof value === 'string') return [[name, Number(value)]];
      return [[name, value]];
    }),
  );
}

/** Presets: a starting point that sets a few hyperparameters (and evaluation settings) over the documented defaults. */
export const PRESETS = {
  quick: {
    label: 'Quick check',
    description: 'A few dozen steps, a point per step: does the pipeline run, does the loss move?',
    // Half of max_length for the prompt: the preference and GRPO trainers need room left for the answer.
    hyperparameters: { epochs: 1, max_steps: 30, logging_steps: 1, save_strategy: 'no', max_length: 512, max_prompt_length: 256, warmup_ratio: 0 },
    // eval_steps' default (50) is past the 30 steps: evaluation turned on would never run (#39).
    eval_config: { eval_steps: 10 },
  },
  standard: {
    label: 'Standard',
    description: 'The interface’s defaults: 3 epochs, learning rate 2e-4, LoRA rank 16.',
    hyperparameters: {},
  },
  thorough: {
    label: 'Thorough',
    description: '5 epochs with a lower, cosine-decayed learning rate and a larger adapter.',
    hyperparameters: { epochs: 5, learning_rate: 0.0001, lr_scheduler_type: 'cosine', warmup_ratio: 0.05, lora_rank: 32, lora_alpha: 64, max_grad_norm: 1 },
  },
} as const satisfies Record<string, { label: string; description: string; hyperparameters: Record<string, unknown>; eval_config?: Record<string, unknown> }>;
export type PresetName = keyof typeof PRESETS;

/** A preset's hyperparameters and evaluation settings over the documented defaults. */
export function presetSettings(preset: PresetName): { hyperparameters: Record<string, unknown>; evalConfig: Record<string, unknown> } {
  const chosen: { hyperparameters: Record<string, unknown>; eval_config?: Record<string, unknown> } = PRESETS[preset];
  return {
    hyperparameters: { ...defaultsOf(HYPERPARAMETERS), ...chosen.hyperparameters },
    evalConfig: { ...defaultsOf(EVAL_CONFIG), ...chosen.eval_config },
  };
}
