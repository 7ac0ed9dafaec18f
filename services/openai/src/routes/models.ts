// /v1/models: the base models the model store holds and the caller's fine-tuned models (every completed job's, named
// ft:<base>:<suffix>:<job id>); deleting a fine-tuned model deletes its job and everything it stored.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { Conflict, NotFound } from '@ftp/platform';
import { openaiRoutes } from '@ftp/schema';
import { deleteTrainingJob } from '@ftp/jobs/training';
import { fineTunedModelName, listStoredModels, resolveModelName } from '@ftp/jobs/models';
import { seconds } from '../presenters.ts';

export async function modelRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  routes.route({
    ...openaiRoutes.listModels,
    handler: async (request) => {
      const bases = (await listStoredModels(platform)).map((id) => ({ id, object: 'model' as const, created: 0, owned_by: 'system' }));
      const tuned = (await platform.jobs.list(request.userId))
        .filter((job) => job.status === 'completed')
        .map((job) => ({ id: fineTunedModelName(job), object: 'model' as const, created: seconds(job.finished_at ?? job.updated_at), owned_by: job.user_id }));
      return { object: 'list' as const, data: [...tuned, ...bases] };
    },
  });

  routes.route({
    ...openaiRoutes.retrieveModel,
    handler: async (request) => {
      const model = await resolveModelName(platform, request.userId, request.params.model);
      if (!model.job) return { id: request.params.model, object: 'model' as const, created: 0, owned_by: 'system' };
      return { id: request.params.model, object: 'model' as const, created: seconds(model.job.finished_at ?? model.job.created_at), owned_by: model.job.user_id };
    },
  });

  routes.route({
    ...openaiRoutes.deleteModel,
    handler: async (request) => {
      const model = await resolveModelName(platform, request.userId, request.params.model);
      if (!model.job) throw new Conflict(`${request.params.model} is a base model; only fine-tuned models are deleted here`);
      if (model.choice.checkpoint_step !== undefined) throw new NotFound('fine-tuned model', request.params.model);
      await deleteTrainingJob(platform, request.userId, model.job.job_id);
      return { id: request.params.model, object: 'model' as const, deleted: true as const };
    },
  });
}
