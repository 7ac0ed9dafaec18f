// /train and /jobs: submit, read, list, cancel, delete, stream events (SSE) and the job's own page.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { Conflict, fitListItem, fitResponse, NotFound, type Platform, type TinkerRunRow } from '@ftp/platform';
import { TrainingJob, trainingRoutes } from '@ftp/schema';
import { cancelTrainingJob, deleteTrainingJob, pauseTrainingJob, preflightTrainingJob, presentCheckpoint, presentJob, presentLane, presentWorker, resumeTrainingJob, submitTrainingJob } from '@ftp/jobs/training';
import { laneStates } from '@ftp/jobs/runtime';
import { cancelTinkerRun, deleteTinkerRun, presentTinkerCheckpoint, presentTinkerRun } from '@ftp/jobs/tinker';
import { renderDashboard, signInPage } from '../dashboard.ts';
import { streamJobEvents, streamTinkerRunEvents } from '../job-events.ts';

/** The caller's job as GET /jobs/{id} shows it, with its latest export (404 when it is not theirs), fitted to its
 *  schema (a 500 naming the job in the log when its row cannot be served, #56). */
async function present(platform: Platform, request: FastifyRequest, jobId: string) {
  const found = await platform.jobs.getOwnWithLatestExport(request.userId, jobId).catch(async (err: unknown) => {
    const run = err instanceof NotFound ? await tinkerRun(platform, request, jobId) : undefined;
    if (!run) throw err;
    return run;
  });
  if (!('job' in found)) return fitResponse(TrainingJob, presentTinkerRun(found), request.log, { jobId });
  const { job, latestExport } = found;
  const ahead = job.status === 'queued' ? await platform.jobs.queuedAhead([job.job_id]) : undefined;
  return fitResponse(TrainingJob, presentJob(job, latestExport, ahead?.get(job.job_id)), request.log, { jobId: job.job_id });
}

/** Pause and resume are a training job's: a Tinker run lets its worker go by itself when idle, and its next call
 *  brings it back. */
async function refuseForRun(platform: Platform, request: FastifyRequest, jobId: string, what: string): Promise<void> {
  if (await tinkerRun(platform, request, jobId)) throw new Conflict(`${jobId} is a Tinker training run, which cannot be ${what}: it saves its state and lets its worker go after TINKER_IDLE_S without a call, and its next call brings it back`);
}

/** The caller's Tinker training run with this id (its id is a job id: GET /jobs shows runs among the jobs). */
function tinkerRun(platform: Platform, request: FastifyRequest, jobId: string): Promise<TinkerRunRow | undefined> {
  return platform.tinker.getRun(request.userId, jobId);
}

const deletedResources = (platform: Platform, blobs: string[], evaluations: string[], comparisons: string[]): string[] => [
  ...blobs.map((key) => platform.blobs.uri(key)),
  ...evaluations.map((e) => `evaluations/${e}`),
  ...comparisons.map((c) => `comparisons/${c}`),
];

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
      const listed = [
        ...jobs.map((job) => ({ at: job.created_at, id: job.job_id, item: () => presentJob(job, latest.get(job.job_id), ahead.get(job.job_id)) })),
        ...(await platform.tinker.listAllRuns(request.userId)).map((run) => ({ at: run.created_at, id: run.run_id, item: () => presentTinkerRun(run) })),
      ].sort((a, b) => b.at.getTime() - a.at.getTime() || (a.id < b.id ? 1 : -1));
      return { jobs: listed.flatMap(({ id, item }) => fitListItem(TrainingJob, item, request.log, { jobId: id }) ?? []) };
    },
  });

  routes.route({
    ...trainingRoutes.getJob,
    handler: async (request) => present(platform, request, request.params.job_id),
  });

  routes.route({
    ...trainingRoutes.cancelJob,
    handler: async (request) => {
      const run = await tinkerRun(platform, request, request.params.job_id);
      if (run) await cancelTinkerRun(platform, run);
      else await cancelTrainingJob(platform, request.userId, request.params.job_id);
      return present(platform, request, request.params.job_id);
    },
  });

  routes.route({
    ...trainingRoutes.pauseJob,
    handler: async (request) => {
      await refuseForRun(platform, request, request.params.job_id, 'paused');
      await pauseTrainingJob(platform, request.userId, request.params.job_id);
      return present(platform, request, request.params.job_id);
    },
  });

  routes.route({
    ...trainingRoutes.resumeJob,
    handler: async (request) => {
      await refuseForRun(platform, request, request.params.job_id, 'resumed');
      await resumeTrainingJob(platform, request.userId, request.params.job_id);
      return present(platform, request, request.params.job_id);
    },
  });

  routes.route({
    ...trainingRoutes.deleteJob,
    handler: async (request) => {
      const run = await tinkerRun(platform, request, request.params.job_id);
      if (run) {
        const { blobs, evaluations, comparisons } = await deleteTinkerRun(platform, run);
        return {
          job_id: run.run_id,
          deleted: true,
          message: `training run ${run.run_id} and ${blobs.length} stored files were deleted`,
          deleted_resources: [`tinker_runs/${run.run_id}`, ...deletedResources(platform, blobs, evaluations, comparisons)],
        };
      }
      const { job, blobs, evaluations, comparisons } = await deleteTrainingJob(platform, request.userId, request.params.job_id);
      return {
        job_id: job.job_id,
        deleted: true,
        // Workers keep local copies (dataset, model caches) in their own folders; each deletes those of jobs
        // that no longer exist within a heartbeat or two.
        message: `job ${job.job_id} and ${blobs.length} stored files were deleted; workers drop their local copies of it shortly`,
        deleted_resources: [`training_jobs/${job.job_id}`, ...deletedResources(platform, blobs, evaluations, comparisons)],
      };
    },
  });

  routes.route({
    ...trainingRoutes.streamJobEvents,
    handler: async (request, reply) => {
      const run = await tinkerRun(platform, request, request.params.job_id);
      if (run) {
        reply.hijack();
        return streamTinkerRunEvents(platform, run, request.raw, reply.raw);
      }
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
      // A Tinker run's checkpoints are the weights it saved, by name, oldest first.
      const run = await tinkerRun(platform, request, request.params.job_id);
      if (run) return { checkpoints: (await platform.tinker.listCheckpoints(request.userId, run.run_id)).reverse().map(presentTinkerCheckpoint) };
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
