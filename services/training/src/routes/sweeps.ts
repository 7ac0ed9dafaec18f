// /sweeps: start a hyperparameter sweep (its trials are training jobs a worker's `sweep` lane submits), read, list,
// cancel and delete it.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Platform, SweepRow } from '@ftp/platform';
import { sweepRoutes, type Sweep } from '@ftp/schema';
import { cancelSweep, createSweep, deleteSweep, getSweep, presentSweep } from '@ftp/jobs/training';

/** Sweeps as the API shows them: their trials and the trials' jobs read in two queries. */
async function present(platform: Platform, rows: readonly SweepRow[]): Promise<Sweep[]> {
  const trials = await platform.sweeps.trialsOf(rows.map((r) => r.sweep_id));
  const jobIds = [...trials.values()].flat().flatMap((t) => t.job_id ?? []);
  const jobs = new Map((await platform.jobs.getManyForWorker(jobIds)).map((j) => [j.job_id, j]));
  return rows.map((row) => presentSweep(row, trials.get(row.sweep_id) ?? [], jobs));
}

export async function sweepRoutesPlugin(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  routes.route({
    ...sweepRoutes.createSweep,
    handler: async (request) => ({ sweep_id: await createSweep(platform, request.userId, request.body) }),
  });

  routes.route({
    ...sweepRoutes.listSweeps,
    handler: async (request) => ({ sweeps: await present(platform, await platform.sweeps.list(request.userId)) }),
  });

  routes.route({
    ...sweepRoutes.getSweep,
    handler: async (request) => (await present(platform, [await getSweep(platform, request.userId, request.params.sweep_id)]))[0]!,
  });

  routes.route({
    ...sweepRoutes.cancelSweep,
    handler: async (request) => (await present(platform, [await cancelSweep(platform, request.userId, request.params.sweep_id)]))[0]!,
  });

  routes.route({
    ...sweepRoutes.deleteSweep,
    handler: async (request) => ({ sweep_id: request.params.sweep_id, deleted: true as const, jobs: await deleteSweep(platform, request.userId, request.params.sweep_id) }),
  });
}
