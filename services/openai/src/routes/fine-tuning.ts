// /v1/fine_tuning/jobs: create (files validated, a processed dataset made, a training job queued), list, retrieve,
// cancel, events (the job's event log, newest first) and checkpoints (the stored ones, each usable as a model).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { fitListItem, fitResponse, type TrainingJobRow } from '@ftp/platform';
import { FineTuningJob, openaiRoutes } from '@ftp/schema';
import { cancelTrainingJob, pauseTrainingJob, resumeTrainingJob } from '@ftp/jobs/training';
import { createFineTuningJob, ownJob } from '../fine-tuning.ts';
import { listPage, presentCheckpoint, presentEvent, presentFineTuningJob } from '../presenters.ts';

/** A job as /v1 serves it, fitted to its schema: a row that cannot be served is the 500 with the request id, the job
 *  named in the log (#56). */
const served = (request: FastifyRequest, job: TrainingJobRow) => fitResponse(FineTuningJob, presentFineTuningJob(job), request.log, { jobId: job.job_id });

export async function fineTuningRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  routes.route({
    ...openaiRoutes.createFineTuningJob,
    handler: async (request) => {
      const jobId = await createFineTuningJob(platform, request.userId, request.body);
      return served(request, await ownJob(platform, request.userId, jobId));
    },
  });

  routes.route({
    ...openaiRoutes.listFineTuningJobs,
    handler: async (request) => {
      const { rows, hasMore } = await platform.jobs.listPage(request.userId, request.query);
      // One row that cannot be served is left out (and logged), not a 500 for the whole page (#56).
      const data = rows.flatMap((row) => fitListItem(FineTuningJob, () => presentFineTuningJob(row), request.log, { jobId: row.job_id }) ?? []);
      return { object: 'list' as const, data, has_more: hasMore };
    },
  });

  routes.route({
    ...openaiRoutes.retrieveFineTuningJob,
    handler: async (request) => served(request, await ownJob(platform, request.userId, request.params.fine_tuning_job_id)),
  });

  routes.route({
    ...openaiRoutes.cancelFineTuningJob,
    handler: async (request) => {
      await cancelTrainingJob(platform, request.userId, request.params.fine_tuning_job_id);
      return served(request, await ownJob(platform, request.userId, request.params.fine_tuning_job_id));
    },
  });

  routes.route({
    ...openaiRoutes.pauseFineTuningJob,
    handler: async (request) => served(request, await pauseTrainingJob(platform, request.userId, request.params.fine_tuning_job_id)),
  });

  routes.route({
    ...openaiRoutes.resumeFineTuningJob,
    handler: async (request) => served(request, await resumeTrainingJob(platform, request.userId, request.params.fine_tuning_job_id)),
  });

  routes.route({
    ...openaiRoutes.listFineTuningEvents,
    handler: async (request) => {
      const job = await ownJob(platform, request.userId, request.params.fine_tuning_job_id);
      // The worker's notes on preparing the model for chat after the job (about: model) are no fine-tuning event.
      const events = (await platform.jobs.events(job.job_id)).filter((event) => event.data.about !== 'model').reverse().flatMap((event) => presentEvent(job, event) ?? []);
      const { first_id: _first, last_id: _last, ...result } = listPage(events, request.query.after, request.query.limit);
      return result;
    },
  });

  routes.route({
    ...openaiRoutes.listFineTuningCheckpoints,
    handler: async (request) => {
      const job = await ownJob(platform, request.userId, request.params.fine_tuning_job_id);
      const [checkpoints, events] = [await platform.jobs.checkpoints(job.job_id), await platform.jobs.events(job.job_id)];
      const presented = checkpoints.reverse().map((checkpoint) => presentCheckpoint(job, checkpoint, events));
      return listPage(presented, request.query.after, request.query.limit);
    },
  });
}
