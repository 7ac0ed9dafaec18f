// Route contracts of /v1/fine_tuning/alpha/graders.
import { GraderRunRequest, GraderRunResponse, GraderValidateRequest, GraderValidateResponse } from '../../openai/graders.ts';
import { bearerRequired, defineRoute } from '../contract.ts';
import { common, error, invalid, notFound } from './common.ts';

export const graderRoutes = {
  validateGrader: defineRoute({
    method: 'POST',
    url: '/v1/fine_tuning/alpha/graders/validate',
    schema: {
      operationId: 'validateGrader',
      summary: 'Check a grader',
      description: 'Answers the grader when it can run: its fields, templates (variables of item and sample), a multi grader’s formula, a python grader’s source (compiled on a worker, never run), and a judge the caller may use (404 model_not_found otherwise).',
      tags: ['fine-tuning'],
      security: bearerRequired,
      body: GraderValidateRequest,
      response: { 200: GraderValidateResponse, 400: invalid, 404: notFound('judge model'), ...common },
    },
  }),

  runGrader: defineRoute({
    method: 'POST',
    url: '/v1/fine_tuning/alpha/graders/run',
    schema: {
      operationId: 'runGrader',
      summary: 'Grade one answer',
      description:
        'Grades model_sample against item on a worker (the evaluate queue), as a reinforcement job grades each sampled answer: the reward, ' +
        'each sub-grader’s (multi), and why it is 0 when the answer could not be graded (metadata.errors; a python grader runs sandboxed).',
      tags: ['fine-tuning'],
      security: bearerRequired,
      body: GraderRunRequest,
      response: { 200: GraderRunResponse, 400: invalid, 404: notFound('judge model'), 504: error('The worker did not answer within INFERENCE_TIMEOUT_MS'), ...common },
    },
  }),
};
