// /exports: start an export, list the caller's jobs with exports (a file or a hub repo), one job's (or Tinker run's)
// artifacts and latest export, and the download of a file artifact.
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { Conflict, invalidField, NotFound } from '@ftp/platform';
import { exportRoutes as contracts } from '@ftp/schema';
import { hasExports, presentExportDetails, presentExportSummary } from '@ftp/jobs/training';
import { onnxModelFile } from '@ftp/jobs/models';
import { presentTinkerExports } from '@ftp/jobs/tinker';
import { startExport } from '../start-export.ts';

/** A Tinker run's artifact groups: its exports are of its sampler weights, each in its own export record. */
const EMPTY_GROUPS = { file: {}, raw: {}, hub: {} } as { file: Record<string, string | undefined>; raw: Record<string, string | undefined>; hub: Record<string, string | undefined> };

export async function exportRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  routes.route({
    ...contracts.createExport,
    handler: async (request) => startExport(platform, request.userId, request.body),
  });

  routes.route({
    ...contracts.listExports,
    handler: async (request) => {
      const jobs = (await platform.jobs.list(request.userId)).filter(hasExports);
      const onnx = await platform.exports.completedOnnxOfJobs(request.userId, jobs.filter((j) => j.artifacts.raw.onnx).map((j) => j.job_id));
      return jobs.map((job) => presentExportSummary(job, onnx));
    },
  });

  routes.route({
    ...contracts.getExport,
    handler: async (request) => {
      const run = await platform.tinker.getRun(request.userId, request.params.job_id);
      if (run) return presentTinkerExports(run, await platform.exports.latestForJob(request.userId, run.run_id));
      const { job, latestExport } = await platform.jobs.getOwnWithLatestExport(request.userId, request.params.job_id);
      const onnx = job.artifacts.raw.onnx ? await platform.exports.completedOnnxOfJobs(request.userId, [job.job_id]) : [];
      return presentExportDetails(job, latestExport, onnx);
    },
  });

  routes.route({
    ...contracts.downloadExport,
    handler: async (request, reply) => {
      const { type, checkpoint_step: step, checkpoint_name: name, variant } = request.query;
      const run = await platform.tinker.getRun(request.userId, request.params.job_id);
      if (run && name === undefined) throw invalidField(['query', 'checkpoint_name'], `${run.run_id} is a Tinker training run: name the sampler weights whose export to download with checkpoint_name`, 'missing');
      const job = run ? { job_id: run.run_id, artifacts: EMPTY_GROUPS } : await platform.jobs.getOwn(request.userId, request.params.job_id);
      // The final model's file is in the job's artifact groups; a checkpoint's (or a run's sampler weights'), in its
      // latest completed export. One ONNX variant is a file of the export's folder (its raw artifact).
      const group = variant === undefined ? 'file' : 'raw';
      const checkpoint = name ?? step;
      const uri = checkpoint === undefined
        ? job.artifacts[group][type as 'onnx']
        : (await platform.exports.latestOfCheckpoint(request.userId, job.job_id, type, checkpoint))?.artifacts.find((a) => a.variant === group)?.path;
      let key = uri ? platform.blobs.keyFromUri(uri) : undefined;
      if (key && variant !== undefined) {
        key = `${key}/onnx/${onnxModelFile(variant)}`;
        if (await platform.blobs.stat(`${key}_data`)) {
          throw new Conflict(`the ${variant} model of training job ${job.job_id} keeps its weights in a second file (over 2 GB); download the whole folder: leave variant out`);
        }
      }
      const info = key ? await platform.blobs.stat(key) : undefined;
      if (!key || !info) {
        const of = name !== undefined ? ` of the sampler weights ${name}` : step === undefined ? '' : ` at checkpoint ${step}`;
        const error = new NotFound(`${type}${variant === undefined ? '' : ` ${variant}`} file${of} of training ${run ? 'run' : 'job'}`, job.job_id);
        const asked = name !== undefined ? `, "checkpoint_name": "${name}"` : step === undefined ? '' : `, "checkpoint_step": ${step}`;
        error.message += `; make one with POST /exports {"job_id": "${job.job_id}", "export_type": "${type}"${asked}}`;
        throw error;
      }
      const file = checkpoint === undefined ? path.posix.basename(key) : `${name ?? `checkpoint-${step}`}-${path.posix.basename(key)}`;
      return reply
        .type('application/octet-stream')
        .header('content-length', info.size)
        .header('content-disposition', `attachment; filename="${job.job_id}-${file}"`)
        .send(await platform.blobs.get(key));
    },
  });
}
