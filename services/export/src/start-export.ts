// POST /exports: the checks made before an export is queued (the job exists, is the caller's, has completed
// and has the model asked for; or the Tinker run has saved the sampler weights named), then the export row and the
// queue entry. The hub token is stored sealed until
// the worker that runs the export has used it.
import { Conflict, invalidField, type Platform } from '@ftp/platform';
import type { ExportCreateResult, ExportRequest } from '@ftp/schema';
import { checkCheckpoint, checkModelChoice, trainsWholeModel } from '@ftp/jobs/models';
import { queueExport } from '@ftp/jobs/training';

/** What an export_type exports, as a sentence names it (#39: "export of the merged of job …"). */
const EXPORTED: Record<ExportRequest['export_type'], string> = { adapter: 'adapter', merged: 'merged model', gguf: 'GGUF file', onnx: 'ONNX model' };

export async function startExport(platform: Platform, userId: string, request: ExportRequest): Promise<ExportCreateResult> {
  if (request.checkpoint_name !== undefined) return startTinkerExport(platform, userId, request);
  const run = await platform.tinker.getRun(userId, request.job_id);
  if (run) {
    throw invalidField(['body', 'checkpoint_name'], `${request.job_id} is a Tinker training run: its models are the sampler weights it saved; name them with checkpoint_name`, 'missing');
  }
  const job = await platform.jobs.getOwn(userId, request.job_id);
  const step = request.checkpoint_step;
  if (step === undefined && job.status !== 'completed') {
    const hint = job.status === 'failed' ? 'train it again, or export one of its checkpoints with checkpoint_step' : 'wait until it has completed, or export one of its checkpoints with checkpoint_step';
    throw new Conflict(`training job ${job.job_id} is ${job.status}; only a completed job can be exported (${hint})`);
  }
  if (request.export_type === 'gguf' && job.modality === 'vision') {
    throw new Conflict(`training job ${job.job_id} trained a vision model; GGUF export covers text models only (the image encoder would need a separate llama.cpp mmproj file), use export_type adapter or merged`);
  }
  if (request.export_type === 'onnx' && job.modality === 'vision') {
    throw new Conflict(`training job ${job.job_id} trained a vision model; ONNX export covers text models only (transformers.js would need the image encoder as a model of its own), use export_type adapter or merged`);
  }
  if (request.export_type === 'adapter' && trainsWholeModel(job)) {
    throw new Conflict(`training job ${job.job_id} trained the whole model, so it has no adapter; use export_type merged or gguf`);
  }
  if (step !== undefined) await checkCheckpoint(platform, job, step);

  const exportId = await queueExport(platform, {
    jobId: job.job_id,
    userId,
    type: request.export_type,
    checkpointStep: step,
    destination: request.destination,
    hubRepoId: request.hub_repo_id,
    hubToken: request.hub_token,
    ggufQuantization: request.gguf_quantization,
    onnxVariants: request.onnx_variants,
  });
  return started(request, exportId, `job ${job.job_id}${step === undefined ? '' : ` at checkpoint ${step}`}`);
}

/** A Tinker run's sampler weights (job_id the run's id): an adapter over the run's base, exported as a job's is. */
async function startTinkerExport(platform: Platform, userId: string, request: ExportRequest): Promise<ExportCreateResult> {
  const checked = await checkModelChoice(platform, userId, { model_source: 'adapter', job_id: request.job_id, checkpoint_name: request.checkpoint_name!, use_fast_engine: false });
  const exportId = await queueExport(platform, {
    jobId: request.job_id,
    userId,
    type: request.export_type,
    checkpointName: checked.tinker!.saved.name,
    destination: request.destination,
    hubRepoId: request.hub_repo_id,
    hubToken: request.hub_token,
    ggufQuantization: request.gguf_quantization,
    onnxVariants: request.onnx_variants,
  });
  return started(request, exportId, `the sampler weights ${request.checkpoint_name} of training run ${request.job_id}`);
}

function started(request: ExportRequest, exportId: string, of: string): ExportCreateResult {
  const where = [...new Set(request.destination)].map((d) => (d === 'hub' ? `hub repository ${request.hub_repo_id}` : 'cloud storage')).join(' and ');
  return {
    success: true,
    message: `export of the ${EXPORTED[request.export_type]} of ${of} to ${where} started; follow it in latest_export of GET /exports/${request.job_id}`,
    export_id: exportId,
  };
}
