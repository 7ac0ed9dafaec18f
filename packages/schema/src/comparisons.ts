// Pairwise comparisons (POST /comparisons, decisions.md "Sweeps and evaluation that decides"): two models answer the
// same prompts of a dataset, an LLM judge says which answer is better, each pair judged in both orders so that a
// verdict that follows the position counts as a tie. Run by a worker while the request waits, as POST /evaluation is;
// the result is stored and can be read again, listed and deleted.
import { z } from 'zod';
import { boundedInt, ChatMessage, documentedRules, Identifier, Secret, Timestamp } from './common.ts';
import { DEFAULT_MAX_EVAL_SAMPLES, ModelSource, modelChoiceFields, modelChoiceRules, refineModelChoice } from './inference.ts';

/** One side of a comparison: a job's model or checkpoint, or a base model, on either engine. */
const ComparedModelFields = z.strictObject({
  model_source: modelChoiceFields.model_source,
  job_id: modelChoiceFields.job_id,
  checkpoint_step: modelChoiceFields.checkpoint_step,
  checkpoint_name: modelChoiceFields.checkpoint_name,
  base_model_id: modelChoiceFields.base_model_id,
  use_fast_engine: z.boolean().default(false).describe('true: llama.cpp on the GGUF; false: transformers'),
});

export const ComparedModel = ComparedModelFields.superRefine(refineModelChoice).meta({
  id: 'ComparedModel',
  description: 'A model that answers: a trained job’s adapter or merged model (job_id, optionally a checkpoint_step), a Tinker run’s sampler weights (job_id the run’s id, checkpoint_name), or a base model',
  ...documentedRules(...modelChoiceRules),
});
export type ComparedModel = z.infer<typeof ComparedModel>;

export const JudgeSettings = z
  .strictObject({
    model: z
      .string()
      .min(1)
      .max(256)
      .describe('The judge, named as in /v1: a base model or one of your fine-tuned models (ft:…) of this stack, or, with LLM_API_BASE set, a model served there'),
    criteria: z.string().min(1).max(2000).optional().describe('What “better” means for this task (default: correct, helpful, clear)'),
    max_tokens: boundedInt(1, 1024).default(16).describe('Tokens the judge may write per verdict; its first “Answer 1”, “Answer 2” or “Tie” is read'),
  })
  .meta({ id: 'JudgeSettings', description: 'The LLM judge asked which of two answers is better' });
export type JudgeSettings = z.infer<typeof JudgeSettings>;

/** The fields of POST /comparisons; the stored request and the queue's work reuse them without hub_token. */
export const ComparisonCreateFields = z.strictObject({
  hub_token: Secret.optional().describe('Model-hub credential for gated base models; never stored'),
  dataset_id: Identifier.describe('Processed dataset whose prompts both models answer: its test split (train when there is none), every message before the last assistant message of each row'),
  model_a: ComparedModel,
  model_b: ComparedModel,
  judge: JudgeSettings,
  max_samples: boundedInt(1)
    .optional()
    .describe(`Compare on at most this many rows (server limit MAX_EVAL_SAMPLES, default ${DEFAULT_MAX_EVAL_SAMPLES}: 422 above it)`)
    .meta({ maximum: DEFAULT_MAX_EVAL_SAMPLES }),
  max_new_tokens: boundedInt(1).default(256).describe('Tokens each model may write per answer'),
  temperature: z.number().min(0).default(0).describe('The models’ sampling temperature; 0 is greedy'),
});

const sameModel = (a: ComparedModel, b: ComparedModel) =>
  a.model_source === b.model_source && a.job_id === b.job_id && a.checkpoint_step === b.checkpoint_step && a.checkpoint_name === b.checkpoint_name && a.base_model_id === b.base_model_id && a.use_fast_engine === b.use_fast_engine;

export const ComparisonCreateRequest = ComparisonCreateFields.superRefine((request, ctx) => {
  if (sameModel(request.model_a, request.model_b)) {
    ctx.addIssue({ code: 'custom', path: ['model_b'], message: 'model_b is model_a again; compare two different models (another job, checkpoint_step, base model or engine)' });
  }
}).meta({
  id: 'ComparisonCreateRequest',
  description: 'Compare two models’ answers to a dataset’s prompts with an LLM judge, each pair judged in both orders. model_a and model_b must differ (a 422 at model_b otherwise)',
  examples: [{ dataset_id: 'pd_01', model_a: { job_id: 'job_01' }, model_b: { model_source: 'base', base_model_id: 'HuggingFaceTB/SmolLM2-135M-Instruct' }, judge: { model: 'gpt-4.1-mini' }, max_samples: 100 }],
});
export type ComparisonCreateRequest = z.infer<typeof ComparisonCreateRequest>;

export const StoredComparisonRequest = ComparisonCreateFields.omit({ hub_token: true });
export type StoredComparisonRequest = z.infer<typeof StoredComparisonRequest>;

const PositionVerdict = z
  .enum(['first', 'second', 'tie'])
  .nullable()
  .describe('The position the judge preferred in this order, a tie, or null when its reply named none (counted as a tie)');
const Outcome = z.enum(['win', 'tie', 'loss']);
const Rates = z.object({ win: z.number(), tie: z.number(), loss: z.number() });

export const PairVerdict = z.object({
  sample_index: z.number().int().nonnegative().describe('The row of the split (0-based)'),
  prompt: z.array(ChatMessage).describe('What both models were asked'),
  answer_a: z.string(),
  answer_b: z.string(),
  a_first: PositionVerdict.describe('The verdict with A’s answer shown first'),
  b_first: PositionVerdict.describe('The verdict with B’s answer shown first'),
  reply_a_first: z.string().describe('The judge’s reply with A first, as it wrote it'),
  reply_b_first: z.string().describe('The judge’s reply with B first'),
  outcome: Outcome.describe('A’s result on this pair: the verdict both orders agree on, a tie when they do not'),
  consistent: z.boolean().describe('Whether the verdict survived the swap'),
});
export type PairVerdict = z.infer<typeof PairVerdict>;

/** What the worker answers and the API stores: the summary of pairwise.ts, the verdicts, and where they came from. */
export const ComparisonResult = z.object({
  split: z.string().describe('The split whose prompts were used'),
  pairs: z.number().int().nonnegative(),
  counts: z.object({ win: z.number().int(), tie: z.number().int(), loss: z.number().int() }).describe('A’s wins, ties and losses against B after both orders'),
  rates: Rates.describe('counts / pairs'),
  win_share: z.number().nullable().describe('A’s share of the pairs with a winner (win / (win + loss)); null when none had one'),
  interval: z.tuple([z.number(), z.number()]).describe('Wilson 95% interval of win_share ([0, 1] when no pair had a winner)'),
  position_consistency: z.number().describe('Share of pairs whose verdict survived the swap: 1 for a judge that ignores order, 0 for one that always picks a position'),
  flipped: z.array(z.number().int()).describe('sample_index of the pairs whose verdict followed the position (counted as ties)'),
  unreadable: z.array(z.number().int()).describe('sample_index of the pairs where a reply named no verdict'),
  winner: z.enum(['A', 'B']).nullable().describe('A or B when the interval leaves 0.5 out; null while it holds 0.5 (no winner declared)'),
  verdicts: z.array(PairVerdict),
  warnings: z.array(z.string()),
});
export type ComparisonResult = z.infer<typeof ComparisonResult>;

export const Comparison = ComparisonResult.extend({
  id: Identifier.describe('cmp_…'),
  dataset_id: Identifier,
  model_a: ComparedModelFields.extend({ model_source: ModelSource }).describe('model_a as asked (defaults filled in)'),
  model_b: ComparedModelFields.extend({ model_source: ModelSource }).describe('model_b as asked'),
  judge: JudgeSettings,
  request: StoredComparisonRequest.describe('The request as it was accepted (defaults filled in), without hub_token'),
  elapsed_seconds: z.number().describe('How long the worker took: both models’ answers and the judge’s verdicts'),
  created_at: Timestamp,
}).meta({ id: 'Comparison', description: 'A finished pairwise comparison of model A against model B' });
export type Comparison = z.infer<typeof Comparison>;

export const ComparisonListQuery = z.object({
  after: Identifier.optional().describe('The last id of the previous page'),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

export const ComparisonList = z
  .object({
    comparisons: z.array(Comparison).describe('The caller’s comparisons, newest first'),
    has_more: z.boolean().describe('Whether another page follows (ask again with after = the last id of this one)'),
  })
  .meta({ id: 'ComparisonList' });
export type ComparisonList = z.infer<typeof ComparisonList>;

export const ComparisonParams = z.object({ comparison_id: Identifier.describe('From POST /comparisons') });

export const ComparisonDeleteResult = z.object({ id: Identifier, deleted: z.literal(true) }).meta({ id: 'ComparisonDeleteResult' });
