// Route contracts of the evaluations resource on the inference service (decisions.md "Sweeps and evaluation that
// decides"): create, list, get, follow, cancel and delete evaluations that run benchmarks in the background.
import { EvaluationCreateRequest, EvaluationDeleteResult, EvaluationList, EvaluationListQuery, EvaluationParams, EvaluationStreamEvent, Evaluation } from '../evaluations.ts';
import { bearerOptional, conflict, defineRoute, invalidRequest, malformedJson, mediaResponse, notFound, serviceErrors } from './contract.ts';

const tags = ['evaluations'] as const;
const evaluationNotFound = notFound('evaluation');

export const evaluationRoutes = {
  createEvaluation: defineRoute({
    method: 'POST',
    url: '/evaluations',
    schema: {
      operationId: 'createEvaluation',
      summary: 'Start an evaluation with benchmarks',
      description:
        'Queues lm-evaluation-harness tasks and/or HumanEval on a model (a job’s adapter or merged model, a checkpoint, or a base model), ' +
        'and with with_base on the job’s base model too. Checked before queueing: the model is the caller’s (or shared with them), ' +
        'completed, and its base exists. Answers the queued evaluation; a worker serving the benchmark queue runs it (follow GET ' +
        '/evaluations/{id} or its events). A task lm-eval does not know, or whose data it cannot read, fails the evaluation with lm-eval’s reason.',
      tags,
      security: bearerOptional,
      body: EvaluationCreateRequest,
      response: {
        200: Evaluation.describe('The evaluation, queued'),
        400: malformedJson,
        404: notFound('training job'),
        409: conflict('The training job has not completed, so its model does not exist yet; or an adapter was asked of a job that trained the whole model'),
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),

  listEvaluations: defineRoute({
    method: 'GET',
    url: '/evaluations',
    schema: {
      operationId: 'listEvaluations',
      summary: 'List the caller’s evaluations',
      description: 'The caller’s evaluations, newest first, a page at a time (limit, then after = the last id of the page).',
      tags,
      security: bearerOptional,
      querystring: EvaluationListQuery,
      response: { 200: EvaluationList.describe('One page of the caller’s evaluations'), 422: invalidRequest, ...serviceErrors },
    },
  }),

  getEvaluation: defineRoute({
    method: 'GET',
    url: '/evaluations/:evaluation_id',
    schema: {
      operationId: 'getEvaluation',
      summary: 'Get an evaluation',
      description: 'Its status and, once completed, the numbers of the model (results) and of its base (base_results, with with_base).',
      tags,
      security: bearerOptional,
      params: EvaluationParams,
      response: { 200: Evaluation.describe('The evaluation'), 404: evaluationNotFound, 422: invalidRequest, ...serviceErrors },
    },
  }),

  streamEvaluationEvents: defineRoute({
    method: 'GET',
    url: '/evaluations/:evaluation_id/events',
    schema: {
      operationId: 'streamEvaluationEvents',
      summary: 'Follow an evaluation as server-sent events',
      description:
        'A text/event-stream of the evaluation’s log: `status` changes and `log` lines (the benchmark’s stages and what it runs, a model ' +
        'being prepared), each with its sequence number as `id` (send `Last-Event-ID` to resume after it), followed live while it is queued ' +
        'or running, with a `:` comment every 15 s of silence; the last event is `end` with the final Evaluation, after which the stream ends.',
      tags,
      security: bearerOptional,
      params: EvaluationParams,
      response: {
        200: mediaResponse('text/event-stream', 'The evaluation’s events (each an EvaluationStreamEvent), then `end` with the final evaluation', EvaluationStreamEvent),
        404: evaluationNotFound,
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),

  cancelEvaluation: defineRoute({
    method: 'POST',
    url: '/evaluations/:evaluation_id/cancel',
    schema: {
      operationId: 'cancelEvaluation',
      summary: 'Cancel an evaluation',
      description: 'A queued evaluation is cancelled and never runs; a running one is cancelled at once and its worker stops the benchmark within a heartbeat (about 2 s).',
      tags,
      security: bearerOptional,
      params: EvaluationParams,
      response: { 200: Evaluation.describe('The evaluation, cancelled'), 404: evaluationNotFound, 409: conflict('The evaluation has already completed, failed or been cancelled'), 422: invalidRequest, ...serviceErrors },
    },
  }),

  deleteEvaluation: defineRoute({
    method: 'DELETE',
    url: '/evaluations/:evaluation_id',
    schema: {
      operationId: 'deleteEvaluation',
      summary: 'Delete an evaluation',
      description: 'Removes the evaluation, its results and its log. A queued or running evaluation must be cancelled first.',
      tags,
      security: bearerOptional,
      params: EvaluationParams,
      response: { 200: EvaluationDeleteResult.describe('It was deleted'), 404: evaluationNotFound, 409: conflict('The evaluation is queued or running; cancel it first'), 422: invalidRequest, ...serviceErrors },
    },
  }),
};
