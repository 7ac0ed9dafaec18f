// /v1/fine_tuning/alpha/graders: check a grader, and grade one answer with it (the graders themselves are ../graders.ts,
// shared with reinforcement jobs and POST /evaluation).
import { z } from 'zod';
import { Grader } from '../graders.ts';
import { nullable } from './common.ts';

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
