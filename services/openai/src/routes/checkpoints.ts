// /v1/fine_tuning/checkpoints/{checkpoint}/permissions: OpenAI's checkpoint permissions, mapped onto this project's
// users (a project id is a user id). The owner of a job lets other users run one stored checkpoint of it — chat,
// evaluation, fine-tuning from it, by its name (@ftp/jobs/models jobToRun honours the permission wherever a checkpoint is
// run) — and takes that back. Only the owner sees or changes a checkpoint's permissions; anyone else gets a 404.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { NotFound, type CheckpointPermissionRow } from '@ftp/platform';
import { checkpointModelName, parseModelName } from '@ftp/jobs/models';
import { openaiRoutes } from '@ftp/schema';
import { listPage, seconds } from '../presenters.ts';

const present = (row: CheckpointPermissionRow) => ({ id: row.permission_id, object: 'checkpoint.permission' as const, created_at: seconds(row.created_at), project_id: row.project_id });

export async function checkpointRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  /** The caller's stored checkpoint the name names, or a 404. */
  const ownCheckpoint = async (userId: string, name: string) => {
    const named = parseModelName(name);
    if ('base' in named || named.step === undefined) {
      throw new NotFound('checkpoint', name, 'name a checkpoint as ft:…:ckpt-step-<n>, as GET /v1/fine_tuning/jobs/{id}/checkpoints lists them');
    }
    const job = await platform.jobs.get(userId, named.jobId);
    const stored = job && checkpointModelName(job, named.step) === name && (await platform.jobs.checkpoints(job.job_id)).some((c) => c.step === named.step);
    if (!stored) throw new NotFound('checkpoint', name);
    return { jobId: job.job_id, step: named.step };
  };

  routes.route({
    ...openaiRoutes.createCheckpointPermissions,
    handler: async (request) => {
      const { jobId, step } = await ownCheckpoint(request.userId, request.params.fine_tuned_model_checkpoint);
      const rows = await platform.jobs.grantCheckpoint(jobId, step, [...new Set(request.body.project_ids)]);
      return listPage(rows.map(present), undefined, rows.length);
    },
  });

  routes.route({
    ...openaiRoutes.listCheckpointPermissions,
    handler: async (request) => {
      const { jobId, step } = await ownCheckpoint(request.userId, request.params.fine_tuned_model_checkpoint);
      const { after, limit, order, project_id } = request.query;
      let rows = (await platform.jobs.checkpointPermissions(jobId, step)).filter((r) => project_id === undefined || r.project_id === project_id);
      if (order === 'descending') rows = rows.reverse();
      return listPage(rows.map(present), after, limit);
    },
  });

  routes.route({
    ...openaiRoutes.deleteCheckpointPermission,
    handler: async (request) => {
      const { fine_tuned_model_checkpoint, permission_id } = request.params;
      const { jobId, step } = await ownCheckpoint(request.userId, fine_tuned_model_checkpoint);
      if (!(await platform.jobs.revokeCheckpoint(jobId, step, permission_id))) throw new NotFound('checkpoint permission', permission_id);
      return { id: permission_id, object: 'checkpoint.permission' as const, deleted: true as const };
    },
  });
}
