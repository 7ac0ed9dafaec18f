// /comparisons: two models compared by an LLM judge, each pair in both orders (@ftp/jobs/training's comparisons.ts holds
// the domain; the worker's inference/run-comparison.ts runs them while the request waits). Create, list, get, delete;
// another user's comparison reads exactly like an unknown one.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { fitListItem, fitResponse, NotFound, requestLifetime, type ComparisonRow } from '@ftp/platform';
import { Comparison, inferenceRoutes } from '@ftp/schema';
import { createComparison, deleteComparison, presentComparison } from '@ftp/jobs/training';

export function registerComparisonRoutes(app: FastifyInstance): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;
  const present = (row: ComparisonRow, log: FastifyInstance['log']) => fitResponse(Comparison, presentComparison(row), log, { comparisonId: row.comparison_id });

  routes.route({
    ...inferenceRoutes.createComparison,
    handler: async (request, reply) => present(await createComparison(platform, request.userId, request.body, requestLifetime(reply)), request.log),
  });

  routes.route({
    ...inferenceRoutes.listComparisons,
    handler: async (request) => {
      const { rows, hasMore } = await platform.comparisons.listPage(request.userId, request.query);
      // One row that cannot be served is left out (and logged), not a 500 for the whole list.
      const comparisons = rows.flatMap((row) => fitListItem(Comparison, () => presentComparison(row), request.log, { comparisonId: row.comparison_id }) ?? []);
      return { comparisons, has_more: hasMore };
    },
  });

  routes.route({
    ...inferenceRoutes.getComparison,
    handler: async (request) => {
      const row = await platform.comparisons.get(request.userId, request.params.comparison_id);
      if (!row) throw new NotFound('comparison', request.params.comparison_id);
      return present(row, request.log);
    },
  });

  routes.route({
    ...inferenceRoutes.deleteComparison,
    handler: async (request) => {
      await deleteComparison(platform, request.userId, request.params.comparison_id);
      return { id: request.params.comparison_id, deleted: true as const };
    },
  });
}
