// GRPO's reward functions (decisions.md "Training"), one variant per `type`, as training_config.reward_config takes them.
import { z } from 'zod';
import { JudgeMessages, JudgeSampling, SIMILARITY_METRICS } from '../graders.ts';

// string_check, text_similarity, python and multi are OpenAI's graders: what they grade and compare against may be
// templates over the training line's fields ({{item.<field>}}) and the sampled answer ({{sample.output_text}},
// {{sample.output_json.<field>}}).
const rewardName = z.string().min(1).describe('Name shown in the job’s metrics');
const referenceField = z.string().min(1).describe('Dataset column holding the reference');
const rewardWeight = z.number().finite().optional().describe('Weight of this reward in the summed reward (default 1)');
const template = (what: string) => z.string().min(1).max(10_000).describe(what);
const comparedText = {
  reference_field: referenceField.optional().describe('Dataset column holding the reference (or give reference)'),
  reference: template('Template of the reference, e.g. {{item.answer}}, instead of reference_field').optional(),
  input: template('Template of what is graded (default {{sample.output_text}}; {{sample.output_json.<field>}} reads a JSON answer)').optional(),
};
/** One of the two: where the reference comes from. */
const referenceRule = { anyOf: [{ required: ['reference_field'] }, { required: ['reference'] }] };
const StringCheckReward = z
  .strictObject({ type: z.literal('string_check'), name: rewardName, weight: rewardWeight, ...comparedText, operation: z.enum(['eq', 'ne', 'like', 'ilike']).default('eq') })
  .meta(referenceRule);
const TextSimilarityReward = z
  .strictObject({
    type: z.literal('text_similarity'),
    name: rewardName,
    weight: rewardWeight,
    ...comparedText,
    evaluation_metric: z.enum(SIMILARITY_METRICS).describe('cosine: sentence embeddings of the packaged all-MiniLM-L6-v2'),
  })
  .meta(referenceRule);
const PythonReward = z.strictObject({
  type: z.literal('python'),
  name: rewardName,
  weight: rewardWeight,
  source: z
    .string()
    .min(1)
    .max(100_000)
    .describe('Python source defining grade(sample, item) -> float; runs sandboxed (no network, files or environment; CPU time and memory limits), a sample it cannot grade scores 0'),
});
/** What a multi grader combines: the graders above, by name (a formula names them). */
const GraderName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a grader name is a formula variable: letters, digits and _').max(64);
const judgeFields = {
  name: rewardName,
  weight: rewardWeight,
  model: z.string().min(1).describe('Judge model: one of this stack’s models (a base model, your fine-tuned model or checkpoint), run with your rights; or, with LLM_API_BASE set, a model asked there'),
  prompt: z.string().min(1).describe('Judge instruction; may reference {completion} and {column}'),
  reference_field: referenceField.optional(),
};
const ScoreModelReward = z
  .strictObject({
    type: z.literal('score_model'),
    ...judgeFields,
    prompt: judgeFields.prompt.optional().describe('The judge’s instruction; may reference {completion} and {column} (or give input)'),
    input: JudgeMessages.optional().describe('The judge’s messages (OpenAI’s score_model), templates in their content'),
    range: z.tuple([z.number(), z.number()]).default([0, 1]).describe('Lowest and highest score; a judge’s score outside it scores 0'),
    sampling_params: JudgeSampling.optional().describe('The judge’s temperature, top_p, seed and max_completions_tokens'),
  })
  .meta({ anyOf: [{ required: ['prompt'] }, { required: ['input'] }] });
const MultiReward = z.strictObject({
  type: z.literal('multi'),
  name: rewardName,
  weight: rewardWeight,
  graders: z
    .record(GraderName, z.discriminatedUnion('type', [StringCheckReward, TextSimilarityReward, PythonReward, ScoreModelReward]))
    .refine((graders) => Object.keys(graders).length > 0, 'name at least one grader')
    .meta({ minProperties: 1 })
    .describe('The graders combined, by name'),
  calculate_output: z.string().min(1).max(1_000).describe('Formula over the graders’ names: numbers, + - * /, parentheses, min, max, abs'),
});
export const RewardConfig = z
  .discriminatedUnion('type', [
    StringCheckReward,
    TextSimilarityReward,
    z.strictObject({
      type: z.literal('built_in'),
      name: rewardName,
      weight: rewardWeight,
      function_name: z.enum(['format_reward', 'count_xml', 'numerical_accuracy']),
      reference_field: referenceField.optional(),
    }),
    PythonReward,
    MultiReward,
    ScoreModelReward,
    z
      .strictObject({
        type: z.literal('label_model'),
        ...judgeFields,
        prompt: judgeFields.prompt.optional().describe('The judge’s instruction; may reference {completion} and {column} (or give input)'),
        input: JudgeMessages.optional().describe('The judge’s messages (as score_model’s), templates in their content'),
        labels: z.array(z.string().min(1)).min(2).describe('The labels the judge chooses from (asked for as JSON, one of them)'),
        passing_labels: z.array(z.string().min(1)).min(1).describe('Labels that earn the reward (1; any other label 0)'),
        sampling_params: JudgeSampling.optional().describe('The judge’s temperature, top_p, seed and max_completions_tokens'),
      })
      .meta({ anyOf: [{ required: ['prompt'] }, { required: ['input'] }] }),
  ])
  .meta({ id: 'RewardConfig', description: 'One GRPO reward function' });
export type RewardConfig = z.infer<typeof RewardConfig>;
