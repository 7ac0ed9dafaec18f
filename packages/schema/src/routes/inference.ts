// Route contracts of the inference service (interface.md 4.4): evaluation and batch inference, and the evaluations that
// run benchmarks in the background (evaluations.ts).
import {
  BatchInferenceRequest,
  BatchInferenceResult,
  EvaluationRequest,
  EvaluationResult,
} from '../inference.ts';
import {
  bearerRequired,
  conflict,
  defineRoute,
  healthRoute,
  metricsRoute,
  invalidRequest,
  malformedJson,
  notFound,
  serviceErrors,
} from './contract.ts';
import { ErrorBody } from '../common.ts';
import { evaluationRoutes } from './evaluations.ts';
import { comparisonRoutes } from './comparisons.ts';

const tags = ['inference'] as const;
const modelConflict = conflict('The training job has not completed, so its model does not exist yet; or an adapter was asked of a job that trained the whole model');
const timedOut = ErrorBody.describe('The request did not finish within INFERENCE_TIMEOUT_MS; detail names the limit');

export const inferenceRoutes = {
  getHealth: healthRoute('inference'),
  getMetrics: metricsRoute(),

  evaluateModel: defineRoute({
    method: 'POST',
    url: '/evaluation',
    schema: {
      operationId: 'evaluateModel',
      summary: 'Evaluate a model on a processed dataset',
      description:
        'Generates answers for the test split (train when there is none) and scores them. The prompt is every message before ' +
        'the last assistant message; the reference is that message. A metric that cannot be computed is reported in warnings, never as 0. ' +
        'max_samples above MAX_EVAL_SAMPLES is a 422; a request that takes longer than INFERENCE_TIMEOUT_MS is a 504.',
      tags,
      security: bearerRequired,
      body: EvaluationRequest,
      response: {
        200: EvaluationResult.describe('Scores and sample predictions'),
        400: malformedJson,
        404: notFound('training job or processed dataset'),
        409: conflict('The training job has not completed, so its model does not exist yet; an adapter was asked of a job that trained the whole model; or the processed dataset is not ready (processing or failed)'),
        422: invalidRequest,
        ...serviceErrors,
        504: timedOut,
      },
    },
  }),

  runBatchInference: defineRoute({
    method: 'POST',
    url: '/inference/batch',
    schema: {
      operationId: 'runBatchInference',
      summary: 'Generate answers for a batch of conversations',
      description:
        'Runs the model once per conversation and returns the generated texts in order (greedy unless temperature > 0). ' +
        'More than MAX_BATCH conversations is a 422; a request that takes longer than INFERENCE_TIMEOUT_MS is a 504.',
      tags,
      security: bearerRequired,
      body: BatchInferenceRequest,
      response: {
        200: BatchInferenceResult.describe('One generated text per conversation'),
        400: malformedJson,
        404: notFound('training job'),
        409: modelConflict,
        422: invalidRequest,
        ...serviceErrors,
        504: timedOut,
      },
    },
  }),

  ...evaluationRoutes,
  ...comparisonRoutes,
};
