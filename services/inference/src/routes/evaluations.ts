// /evaluations: evaluations with benchmarks run by a worker in the background (@ftp/jobs/evaluations holds the domain;
// the worker's evaluations/run-evaluation.ts runs them). Create, list, get, follow, cancel, delete; another user's
// evaluation reads exactly like an unknown one.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { fitListItem, fitResponse, NotFound, streamEventLog, UNFINISHED_EVALUATION, type EvaluationRunRow } from '@ftp/platform';
import { Evaluation, inferenceRoutes } from '@ftp/schema';
import { cancelEvaluation, createEvaluation, deleteEvaluation, presentEvaluation } from '@ftp/jobs/evaluations';
import { checkJudges, checkScoredDataset } from '@ftp/jobs/training';

export function registerEvaluationRoutes(app: FastifyInstance): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;
  const present = (row: EvaluationRunRow, log: FastifyInstance['log']) => fitResponse(Evaluation, presentEvaluation(row), log, { evaluationId: row.evaluation_id });
  const own = async (userId: string, evaluationId: string) => {
    const row = await platform.evaluationRuns.get(userId, evaluationId);
    if (!row) throw new NotFound('evaluation', evaluationId);
    return row;
  };

  routes.route({
    ...inferenceRoutes.createEvaluation,
    handler: async (request) => {
      const { dataset } = request.body;
      if (dataset) {
        // What POST /evaluation checks of the same fields, here before anything is queued.
        await checkScoredDataset(platform, request.userId, dataset, ['body', 'dataset']);
        await checkJudges(platform, request.userId, dataset.graders ?? []);
      }
      return present(await createEvaluation(platform, request.userId, request.body), request.log);
    },
  });

  routes.route({
    ...inferenceRoutes.listEvaluations,
    handler: async (request) => {
      const { rows, hasMore } = await platform.evaluationRuns.listPage(request.userId, request.query);
      // One row that cannot be served is left out (and logged), not a 500 for the whole list.
      const evaluations = rows.flatMap((row) => fitListItem(Evaluation, () => presentEvaluation(row), request.log, { evaluationId: row.evaluation_id }) ?? []);
      return { evaluations, has_more: hasMore };
    },
  });

  routes.route({
    ...inferenceRoutes.getEvaluation,
    handler: async (request) => present(await own(request.userId, request.params.evaluation_id), request.log),
  });

  routes.route({
    ...inferenceRoutes.streamEvaluationEvents,
    handler: async (request, reply) => {
      const { evaluation_id: id } = await own(request.userId, request.params.evaluation_id);
      reply.hijack();
      await streamEventLog<EvaluationRunRow>({
        events: (afterSeq) => platform.evaluationRuns.events(id, afterSeq),
        current: () => platform.evaluationRuns.get(request.userId, id),
        running: (current) => UNFINISHED_EVALUATION.includes(current.status),
        end: (current) => (current ? present(current, request.log) : { id, deleted: true }),
      }, request.raw, reply.raw);
    },
  });

  routes.route({
    ...inferenceRoutes.cancelEvaluation,
    handler: async (request) => present(await cancelEvaluation(platform, request.userId, request.params.evaluation_id), request.log),
  });

  routes.route({
    ...inferenceRoutes.deleteEvaluation,
    handler: async (request) => {
      await deleteEvaluation(platform, request.userId, request.params.evaluation_id);
      return { id: request.params.evaluation_id, deleted: true as const };
    },
  });
}
