// Route contracts of the comparisons resource on the inference service (decisions.md "Sweeps and evaluation that
// decides"): compare two models with an LLM judge, each pair in both orders; read, list and delete the results.
import { Comparison, ComparisonCreateRequest, ComparisonDeleteResult, ComparisonList, ComparisonListQuery, ComparisonParams } from '../comparisons.ts';
import { ErrorBody } from '../common.ts';
import { bearerOptional, conflict, defineRoute, invalidRequest, malformedJson, notFound, serviceErrors } from './contract.ts';

const tags = ['comparisons'] as const;
const comparisonNotFound = notFound('comparison');

export const comparisonRoutes = {
  createComparison: defineRoute({
    method: 'POST',
    url: '/comparisons',
    schema: {
      operationId: 'createComparison',
      summary: 'Compare two models with an LLM judge',
      description:
        'Both models answer the prompts of a processed dataset (its test split, train when there is none); the judge is asked which answer ' +
        'of each pair is better twice, once with A’s answer first and once with B’s, and a verdict that changes with the order counts as a tie. ' +
        'Answers A’s win/tie/loss counts and rates with a Wilson 95% interval of its share of the decided pairs, the judge’s position ' +
        'consistency, the pairs it flipped on, and a winner only when the interval leaves 0.5 out. A worker runs it while the request waits ' +
        '(up to INFERENCE_TIMEOUT_MS); the result is stored (GET /comparisons/{id}). Checked first: both models are the caller’s (or shared ' +
        'with them) and completed, the dataset is ready, and the judge is one the caller may ask.',
      tags,
      security: bearerOptional,
      body: ComparisonCreateRequest,
      response: {
        200: Comparison.describe('The finished comparison'),
        400: malformedJson,
        404: notFound('training job, processed dataset or judge model'),
        409: conflict('A training job has not completed, so its model does not exist yet; or the dataset is still processing'),
        422: invalidRequest,
        504: ErrorBody.describe('The comparison did not finish within INFERENCE_TIMEOUT_MS; detail names the limit'),
        ...serviceErrors,
      },
    },
  }),

  listComparisons: defineRoute({
    method: 'GET',
    url: '/comparisons',
    schema: {
      operationId: 'listComparisons',
      summary: 'List the caller’s comparisons',
      description: 'The caller’s comparisons, newest first, a page at a time (limit, then after = the last id of the page).',
      tags,
      security: bearerOptional,
      querystring: ComparisonListQuery,
      response: { 200: ComparisonList.describe('One page of the caller’s comparisons'), 422: invalidRequest, ...serviceErrors },
    },
  }),

  getComparison: defineRoute({
    method: 'GET',
    url: '/comparisons/:comparison_id',
    schema: {
      operationId: 'getComparison',
      summary: 'Get a comparison',
      description: 'The summary and every pair’s answers and verdicts.',
      tags,
      security: bearerOptional,
      params: ComparisonParams,
      response: { 200: Comparison.describe('The comparison'), 404: comparisonNotFound, 422: invalidRequest, ...serviceErrors },
    },
  }),

  deleteComparison: defineRoute({
    method: 'DELETE',
    url: '/comparisons/:comparison_id',
    schema: {
      operationId: 'deleteComparison',
      summary: 'Delete a comparison',
      description: 'Removes the comparison and the answers it holds. Deleting a job or a processed dataset deletes the comparisons that used it.',
      tags,
      security: bearerOptional,
      params: ComparisonParams,
      response: { 200: ComparisonDeleteResult.describe('It was deleted'), 404: comparisonNotFound, 422: invalidRequest, ...serviceErrors },
    },
  }),
};
