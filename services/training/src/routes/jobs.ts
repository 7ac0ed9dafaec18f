// /train and /jobs: submit, read, list, cancel, delete, stream events (SSE) and the job's own page.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { fitListItem, fitResponse, type Platform } from '@ftp/platform';
import { TrainingJob, trainingRoutes } from '@ftp/schema';
import { cancelTrainingJob, deleteTrainingJob, pauseTrainingJob, preflightTrainingJob, presentCheckpoint, presentJob, presentLane, presentWorker, resumeTrainingJob, submitTrainingJob } from '@ftp/jobs/training';
import { laneStates } from '@ftp/jobs/runtime';
import { renderDashboard, signInPage } from '../dashboard.ts';
import { streamJobEvents } from '../job-events.ts';

/** The caller's job as GET /jobs/{id} shows it, with its latest export (404 when it is not theirs), fitted to its
 *  schema (a 500 naming the job in the log when its row cannot be served, #56). */
async function present(platform: Platform, request: FastifyRequest, jobId: string) {
  const { job, latestExport } = await platform.jobs.getOwnWithLatestExport(request.userId, jobId);
  const ahead = job.status === 'queued' ? await platform.jobs.queuedAhead([job.job_id]) : undefined;
  return fitResponse(TrainingJob, presentJob(job, latestExport, ahead?.get(job.job_id)), request.log, { jobId: job.job_id });
}

export async function jobRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  routes.route({
    ...trainingRoutes.startTraining,
    handler: async (request) =>
      request.body.dry_run
        ? { preflight: await preflightTrainingJob(platform, request.userId, request.body) }
        : { job_id: await submitTrainingJob(platform, request.userId, request.body) },
  });

  routes.route({
    ...trainingRoutes.listJobs,
    handler: async (request) => {
      const jobs = await platform.jobs.list(request.userId);
      const latest = await platform.exports.latestForJobs(request.userId, jobs.map((j) => j.job_id));
      const ahead = await platform.jobs.queuedAhead(jobs.filter((j) => j.status === 'queued').map((j) => j.job_id));
      // One row that cannot be served is left out (and logged), not a 500 for the whole list (#56).
      return {
        jobs: jobs.flatMap((job) => fitListItem(TrainingJob, () => presentJob(job, latest.get(job.job_id), ahead.get(job.job_id)), request.log, { jobId: job.job_id }) ?? []),
      };
    },
  });

  routes.route({
    ...trainingRoutes.getJob,
    handler: async (request) => present(platform, request, request.params.job_id),
  });

  routes.route({
    ...trainingRoutes.cancelJob,
    handler: async (request) => {
      await cancelTrainingJob(platform, request.userId, request.params.job_id);
      return present(platform, request, request.params.job_id);
    },
  });

  routes.route({
    ...trainingRoutes.pauseJob,
    handler: async (request) => {
      await pauseTrainingJob(platform, request.userId, request.params.job_id);
      return present(platform, request, request.params.job_id);
    },
  });

  routes.route({
    ...trainingRoutes.resumeJob,
    handler: async (request) => {
      await resumeTrainingJob(platform, request.userId, request.params.job_id);
      return present(platform, request, request.params.job_id);
    },
  });

  routes.route({
    ...trainingRoutes.deleteJob,
    handler: async (request) => {
      const { job, blobs, evaluations, comparisons } = await deleteTrainingJob(platform, request.userId, request.params.job_id);
      return {
        job_id: job.job_id,
        deleted: true,
        // Workers keep local copies (dataset, model caches) in their own folders; each deletes those of jobs
        // that no longer exist within a heartbeat or two.
        message: `job ${job.job_id} and ${blobs.length} stored files were deleted; workers drop their local copies of it shortly`,
        deleted_resources: [
          `training_jobs/${job.job_id}`,
          ...blobs.map((key) => platform.blobs.uri(key)),
          ...evaluations.map((e) => `evaluations/${e}`),
          ...comparisons.map((c) => `comparisons/${c}`),
        ],
      };
    },
  });

  routes.route({
    ...trainingRoutes.streamJobEvents,
    handler: async (request, reply) => {
      const job = await platform.jobs.getOwn(request.userId, request.params.job_id);
      reply.hijack();
      await streamJobEvents(platform, job, request.raw, reply.raw);
    },
  });

  routes.route({
    ...trainingRoutes.getJobDashboard,
    // A browser opening tracker_url sends no API key: in token and jwt modes it gets a page that says where to look
    // (the console, which signs in with the key), not a JSON 401. Every other error, and other clients, as usual.
    errorHandler: (error, request, reply) => {
      if ((error as { statusCode?: number }).statusCode === 401 && request.headers.accept?.includes('text/html')) {
        return reply.code(401).type('text/html; charset=utf-8').send(signInPage(platform, (request.params as { job_id?: string }).job_id ?? ''));
      }
      return app.errorHandler(error, request, reply);
    },
    handler: async (request, reply) => {
      const job = await platform.jobs.getOwn(request.userId, request.params.job_id);
      const events = await platform.jobs.events(job.job_id);
      return reply.type('text/html; charset=utf-8').send(renderDashboard(job, events));
    },
  });

  routes.route({
    ...trainingRoutes.listCheckpoints,
    handler: async (request) => {
      const job = await platform.jobs.getOwn(request.userId, request.params.job_id);
      return { checkpoints: (await platform.jobs.checkpoints(job.job_id)).map(presentCheckpoint) };
    },
  });

  routes.route({
    ...trainingRoutes.listWorkers,
    handler: async () => {
      const workers = await platform.workers.live(platform.config.WORKER_TIMEOUT_S);
      return { workers: workers.map(presentWorker), queues: (await laneStates(platform, workers)).map(presentLane) };
    },
  });
}
