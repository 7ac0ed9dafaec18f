// Inference service schemas: evaluation over a processed dataset and batch generation over
// conversations (interface.md 2.17, 4.4; decisions.md "Inference and evaluation").
import { z } from 'zod';
import { boundedInt, CheckpointName, CheckpointStep, Conversation, ChatMessage, documentedRules, Identifier, Secret } from './common.ts';
import { batchRequest, evaluationRequest } from './examples.ts';
import { Grader } from './graders.ts';

export const ModelSource = z
  .enum(['adapter', 'merged', 'base'])
  .describe('adapter or merged: a trained job’s model (job_id); base: base_model_id alone')
  .meta({ id: 'ModelSource' });
export type ModelSource = z.infer<typeof ModelSource>;

export const EvaluationMetric = z.enum(['rouge', 'bertscore', 'accuracy', 'exact_match', 'bleu', 'meteor', 'recall', 'precision', 'f1']);
export type EvaluationMetric = z.infer<typeof EvaluationMetric>;

export const TaskType = z
  .enum(['conversation', 'qa', 'summarization', 'translation', 'classification', 'general'])
  .describe('Metric suite: conversation/summarization rouge+bertscore; qa exact_match+f1; translation bleu+meteor; classification accuracy+precision+recall+f1; general rouge+bleu');
export type TaskType = z.infer<typeof TaskType>;

/** Which model a request runs (evaluation, batch inference, evaluations with benchmarks), and the hub token a gated
 *  base model needs. */
export const modelChoiceFields = {
  hub_token: Secret.optional().describe('Model-hub credential for gated base models; never stored'),
  model_source: ModelSource.default('adapter'),
  job_id: Identifier.optional().describe('Trained job whose model runs; required unless model_source is base'),
  checkpoint_step: CheckpointStep.optional(),
  checkpoint_name: CheckpointName.optional(),
  base_model_id: z.string().min(1).optional().describe('Required for base; otherwise must match the job’s base when given'),
};

/** Model choice and generation options common to evaluation and batch inference. */
const generationFields = {
  ...modelChoiceFields,
  use_fast_engine: z.boolean().default(false).describe('true: llama.cpp on the GGUF; false: transformers'),
  max_new_tokens: boundedInt(1).default(256),
  temperature: z.number().min(0).default(0).describe('0 is greedy decoding, and so is anything below 1e-4'),
  top_p: z.number().gt(0).max(1).optional(),
};

type ModelChoice = { model_source: ModelSource; job_id?: string | undefined; base_model_id?: string | undefined; checkpoint_step?: number | undefined; checkpoint_name?: string | undefined };

/** The rules between the model choice's fields (a refinement of every request that has them). */
export function refineModelChoice(request: ModelChoice, ctx: z.RefinementCtx): void {
  if (request.model_source === 'base' && request.base_model_id === undefined) {
    ctx.addIssue({ code: 'custom', path: ['base_model_id'], message: 'base_model_id is required when model_source is base', params: { type: 'missing' } });
  }
  if (request.model_source === 'base' && request.checkpoint_step !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['checkpoint_step'], message: 'checkpoint_step names a checkpoint of a job; use model_source adapter or merged with job_id' });
  }
  if (request.model_source === 'base' && request.checkpoint_name !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['checkpoint_name'], message: 'checkpoint_name names sampler weights of a Tinker run; use model_source adapter or merged with the run’s id as job_id' });
  }
  if (request.checkpoint_step !== undefined && request.checkpoint_name !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['checkpoint_name'], message: 'checkpoint_step names a job’s checkpoint and checkpoint_name a Tinker run’s sampler weights; send one of them' });
  }
  if (request.model_source !== 'base' && request.job_id === undefined) {
    ctx.addIssue({ code: 'custom', path: ['job_id'], message: `job_id is required when model_source is ${request.model_source}`, params: { type: 'missing' } });
  }
}

/** The defaults of MAX_EVAL_SAMPLES and MAX_BATCH (the platform's config): the documents state these limits; a server
 *  configured higher accepts more. */
export const DEFAULT_MAX_EVAL_SAMPLES = 1000;
export const DEFAULT_MAX_BATCH = 64;

/** refineModelChoice, as JSON Schema (model_source defaults to adapter). */
export const modelChoiceRules = [
  { when: { required: ['model_source'], properties: { model_source: { const: 'base' } } }, then: { required: ['base_model_id'], not: { anyOf: [{ required: ['checkpoint_step'] }, { required: ['checkpoint_name'] }] } } },
  { when: { required: ['checkpoint_step'] }, then: { not: { required: ['checkpoint_name'] } } },
  { when: { not: { required: ['model_source'], properties: { model_source: { const: 'base' } } } }, then: { required: ['job_id'] } },
];

/** The evaluation request's fields without its cross-field rules: the evaluate queue's payload reuses them. */
export const EvaluationFields = z.strictObject({
  ...generationFields,
  dataset_id: Identifier.describe('Processed dataset; its test split is used (train when there is none)'),
  metrics: z.array(EvaluationMetric).min(1).optional().describe('Explicit metrics; do not combine with task_type'),
  task_type: TaskType.optional().describe('Metric suite; neither metrics, task_type nor graders means general'),
  graders: z
    .array(Grader)
    .min(1)
    .max(8)
    .optional()
    .describe('OpenAI graders scoring each prediction (sample.output_text) against its row (item.reference: the reference answer; item.<field>: the row’s other fields); each grader’s mean is a metric under its name, each sample’s scores in samples'),
  max_samples: boundedInt(1)
    .optional()
    .describe(`Evaluate at most this many rows (server limit MAX_EVAL_SAMPLES, default ${DEFAULT_MAX_EVAL_SAMPLES}: 422 above it)`)
    .meta({ maximum: DEFAULT_MAX_EVAL_SAMPLES }),
  num_sample_results: boundedInt(0).default(3).describe('How many predictions to return in samples'),
});

/** The rules between the scoring fields (POST /evaluation, and the dataset of POST /evaluations). */
export function refineEvaluationScoring(request: { metrics?: EvaluationMetric[] | undefined; task_type?: TaskType | undefined; graders?: Grader[] | undefined }, ctx: z.RefinementCtx): void {
  if (request.metrics !== undefined && request.task_type !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['task_type'], message: 'send either metrics or task_type, not both' });
  }
  const names = new Set<string>();
  request.graders?.forEach((grader, index) => {
    if (names.has(grader.name) || request.metrics?.includes(grader.name as EvaluationMetric)) {
      ctx.addIssue({ code: 'custom', path: ['graders', index, 'name'], message: `${grader.name} names another grader or metric already; give each grader a name of its own` });
    }
    names.add(grader.name);
  });
}

export const EvaluationRequest = EvaluationFields
  .superRefine((request, ctx) => {
    refineModelChoice(request, ctx);
    refineEvaluationScoring(request, ctx);
  })
  .meta({
    id: 'EvaluationRequest',
    description: 'Score a model on a processed dataset',
    examples: [evaluationRequest],
    ...documentedRules(...modelChoiceRules, { when: { required: ['metrics'] }, then: { not: { required: ['task_type'] } } }),
  });
export type EvaluationRequest = z.infer<typeof EvaluationRequest>;

export const EvaluationSample = z.object({
  prediction: z.string(),
  reference: z.string().describe('Text of the last assistant message'),
  sample_index: z.number().int().nonnegative(),
  input: z.array(ChatMessage).describe('The prompt: every message before the last assistant message'),
  grades: z.record(z.string(), z.number()).optional().describe('Each grader’s score of this prediction'),
});

const MetricValue = z.union([z.number(), z.record(z.string(), z.number())]);

export const EvaluationWarning = z.union([
  z.string(),
  z.object({ metric: z.string(), error: z.string().describe('Why the metric could not be computed') }),
]);

export const EvaluationResult = z
  .object({
    metrics: z.record(z.string(), MetricValue).describe('Metric name → score (or sub-scores, e.g. rouge1, rougeL)'),
    num_samples: z.number().int().nonnegative(),
    dataset_id: Identifier,
    samples: z.array(EvaluationSample),
    warnings: z.array(EvaluationWarning).describe('E.g. that train was used for lack of a test split, or a metric that failed'),
    notes: z
      .array(z.object({ metric: z.string(), note: z.string() }))
      .optional()
      .describe('How a score was computed where it needs saying, e.g. the encoder BERTScore used'),
  })
  .meta({ id: 'EvaluationResult' });
export type EvaluationResult = z.infer<typeof EvaluationResult>;

export const BatchInferenceRequest = z
  .strictObject({
    ...generationFields,
    messages: z
      .array(Conversation)
      .min(1)
      .describe(`Conversations (server limit MAX_BATCH, default ${DEFAULT_MAX_BATCH}: 422 above it); the model answers each`)
      .meta({ maxItems: DEFAULT_MAX_BATCH }),
  })
  .superRefine(refineModelChoice)
  .meta({ id: 'BatchInferenceRequest', description: 'Generate one answer per conversation', examples: [batchRequest], ...documentedRules(...modelChoiceRules) });
export type BatchInferenceRequest = z.infer<typeof BatchInferenceRequest>;

export const BatchInferenceResult = z
  .object({ results: z.array(z.string()).describe('One generated text per conversation, in order') })
  .meta({ id: 'BatchInferenceResult' });
export type BatchInferenceResult = z.infer<typeof BatchInferenceResult>;
