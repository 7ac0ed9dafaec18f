// POST /inference/batch and POST /evaluation: limits first, then the model (the caller's job, or a base model),
// all under the INFERENCE_TIMEOUT_MS time limit.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { invalidField, NotFound } from '@ftp/platform';
import { inferenceRoutes } from '@ftp/schema';
import { plainConversation } from '../conversations.ts';
import type { InferenceEngines } from '../engines.ts';
import { evaluateModel } from '../evaluation.ts';
import { resolveModel } from '../model-files.ts';
import { withTimeLimit } from '../time-limit.ts';

export function registerInferenceRoutes(app: FastifyInstance, engines: InferenceEngines): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;
  const { MAX_BATCH, MAX_EVAL_SAMPLES, INFERENCE_TIMEOUT_MS } = platform.config;

  routes.route({
    ...inferenceRoutes.runBatchInference,
    handler: async (request) => {
      const body = request.body;
      if (body.messages.length > MAX_BATCH) {
        throw invalidField(['body', 'messages'], `${body.messages.length} conversations is more than MAX_BATCH (${MAX_BATCH}); send them in smaller batches`, 'too_big');
      }
      return withTimeLimit(INFERENCE_TIMEOUT_MS, 'batch inference', async (signal) => {
        const model = await resolveModel(platform, request.userId, body, signal);
        const settings = { max_new_tokens: body.max_new_tokens, temperature: body.temperature, top_p: body.top_p };
        return { results: await engines.generate(model.files, body.messages.map(plainConversation), settings, signal) };
      });
    },
  });

  routes.route({
    ...inferenceRoutes.evaluateModel,
    handler: async (request) => {
      const body = request.body;
      if (body.max_samples !== undefined && body.max_samples > MAX_EVAL_SAMPLES) {
        throw invalidField(['body', 'max_samples'], `max_samples ${body.max_samples} is more than MAX_EVAL_SAMPLES (${MAX_EVAL_SAMPLES})`, 'too_big');
      }
      const dataset = await platform.datasets.getProcessed(request.userId, body.dataset_id);
      if (!dataset) throw new NotFound('processed dataset', body.dataset_id);
      return withTimeLimit(INFERENCE_TIMEOUT_MS, 'the evaluation', (signal) => evaluateModel(platform, engines, request.userId, dataset, body, signal));
    },
  });
}
