// POST /inference/batch and POST /evaluation: limits and the model (the caller's completed job, or a base model
// the store or hub has) are checked here, then a worker does the work and this process waits for its answer; a client
// that goes away meanwhile cancels it there.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { invalidField, requestLifetime } from '@ftp/platform';
import { inferenceRoutes } from '@ftp/schema';
import { checkJudges, checkScoredDataset, evaluateOnWorker, plainConversation } from '@ftp/jobs/training';
import { checkModelChoice } from '@ftp/jobs/models';
import { inferQueue, requestFromWorker } from '@ftp/jobs/queues';

export function registerInferenceRoutes(app: FastifyInstance): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;
  const { MAX_BATCH } = platform.config;

  routes.route({
    ...inferenceRoutes.runBatchInference,
    handler: async (request, reply) => {
      const lifetime = requestLifetime(reply); // a client gone stops its generation
      const { hub_token: hubToken, messages, model_source, job_id, checkpoint_step, checkpoint_name, base_model_id, use_fast_engine, max_new_tokens, temperature, top_p } = request.body;
      if (messages.length > MAX_BATCH) {
        throw invalidField(['body', 'messages'], `${messages.length} conversations is more than MAX_BATCH (${MAX_BATCH}); send them in smaller batches`, 'too_big');
      }
      const model = { model_source, job_id, checkpoint_step, checkpoint_name, base_model_id, use_fast_engine };
      await checkModelChoice(platform, request.userId, model, hubToken);
      const payload = {
        userId: request.userId,
        model,
        conversations: messages.map(plainConversation),
        generation: { max_new_tokens, temperature, ...(top_p !== undefined ? { top_p } : {}) },
      };
      const { results } = await requestFromWorker(platform, inferQueue, payload, hubToken, 'batch inference', { signal: lifetime });
      return { results };
    },
  });

  routes.route({
    ...inferenceRoutes.evaluateModel,
    handler: async (request, reply) => {
      const lifetime = requestLifetime(reply);
      const { hub_token: hubToken, ...evaluation } = request.body;
      await checkScoredDataset(platform, request.userId, evaluation, ['body']);
      await checkModelChoice(platform, request.userId, evaluation, hubToken);
      await checkJudges(platform, request.userId, evaluation.graders ?? []);
      return evaluateOnWorker(platform, { userId: request.userId, request: evaluation }, hubToken, lifetime);
    },
  });
}
