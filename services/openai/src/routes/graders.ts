// /v1/fine_tuning/alpha/graders: validate a grader, and run one on an answer, as a reinforcement job grades each
// sampled answer. The schema checks the grader's fields, templates and formula; a worker (the evaluate lane) compiles
// a python grader's source and grades (graders.py in the core).
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { checkJudges, gradeOnWorker } from '@ftp/jobs/training';
import { namedGraders, openaiRoutes, type Grader, type GraderRunResponse } from '@ftp/schema';

/** Whether grading needs more than the schema checked: a python grader's source is compiled by the core. */
const hasPython = (grader: Grader): boolean =>
  grader.type === 'python' || (grader.type === 'multi' && Object.values(namedGraders(grader).graders as Record<string, Grader>).some(hasPython));

export async function graderRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  routes.route({
    ...openaiRoutes.validateGrader,
    handler: async (request) => {
      const { grader } = request.body;
      await checkJudges(platform, request.userId, [grader]);
      if (hasPython(grader)) await gradeOnWorker(platform, request.userId, { grader: namedGraders(grader), outputs: [], items: [] });
      return { grader };
    },
  });

  routes.route({
    ...openaiRoutes.runGrader,
    handler: async (request) => {
      const { grader, model_sample: sample, item } = request.body;
      await checkJudges(platform, request.userId, [grader]);
      const graded = await gradeOnWorker(platform, request.userId, { grader: namedGraders(grader), outputs: [sample], items: [item ?? {}] });
      return presentGrade(grader, graded.rewards[0]!, graded.sub_rewards[0]!, graded.errors[0] ?? null, graded.error_kinds[0] ?? null, graded.elapsed_seconds);
    },
  });
}

/** The core's grade as OpenAI's answer: the reward, the sub-graders', and which error flag says why it is 0. */
export function presentGrade(grader: Grader, reward: number, subRewards: Record<string, number>, error: string | null, kind: string | null, seconds: number): GraderRunResponse {
  const flag = (name: string) => kind === name;
  const known = ['formula_parse_error', 'invalid_variable_error', 'python_grader_runtime_error'];
  return {
    reward,
    metadata: {
      errors: {
        formula_parse_error: flag('formula_parse_error'),
        invalid_variable_error: flag('invalid_variable_error'),
        model_grader_parse_error: false,
        model_grader_refusal_error: false,
        model_grader_server_error: false,
        model_grader_server_error_details: null,
        other_error: error !== null && !known.includes(kind ?? ''),
        python_grader_runtime_error: flag('python_grader_runtime_error'),
        python_grader_runtime_error_details: flag('python_grader_runtime_error') ? error : null,
        python_grader_server_error: false,
        python_grader_server_error_type: null,
        sample_parse_error: false,
        truncated_observation_error: false,
        unresponsive_reward_error: false,
      },
      execution_time: seconds,
      name: grader.name,
      sampled_model_name: null,
      scores: grader.type === 'multi' ? subRewards : { [grader.name]: reward },
      token_usage: null,
      type: grader.type,
    },
    model_grader_token_usage_per_model: {},
    sub_rewards: subRewards,
  };
}
