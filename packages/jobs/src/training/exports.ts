// Starting an export: its row (status running), its sealed hub token and its queue entry. Used by POST /exports
// and by a training job whose export_config sends it to the hub.
import { newId, ServiceUnavailable, type OnnxExtraVariant, type Platform } from '@ftp/platform';
import { ONNX_EXTRA_VARIANTS, type ExportDestination, type ExportType, type GgufQuantization } from '@ftp/schema';
import { exportQueue } from '../queues/index.ts';

export interface NewExport {
  jobId: string;
  userId: string;
  type: ExportType;
  /** A stored checkpoint of the job instead of its final model. */
  checkpointStep?: number | undefined;
  /** A Tinker run's sampler weights (jobId the run's id). */
  checkpointName?: string | undefined;
  destination: ExportDestination[];
  hubRepoId?: string | undefined;
  hubToken?: string | undefined;
  ggufQuantization?: GgufQuantization | undefined;
  /** An ONNX export's variants beside fp32; undefined: all three. */
  onnxVariants?: OnnxExtraVariant[] | undefined;
}

/** Inserts the export row and queues it; returns the export id. */
export async function queueExport(platform: Platform, request: NewExport): Promise<string> {
  const destination = [...new Set(request.destination)];
  const toHub = destination.includes('hub');
  const exportId = newId('exp');
  await platform.exports.insert({
    export_id: exportId,
    job_id: request.jobId,
    user_id: request.userId,
    type: request.type,
    checkpoint_step: request.checkpointStep ?? null,
    checkpoint_name: request.checkpointName ?? null,
    destination,
    hub_repo_id: toHub ? request.hubRepoId! : null,
    gguf_quantization: request.type === 'gguf' ? (request.ggufQuantization ?? 'q8_0') : null,
    onnx_variants: request.type === 'onnx' && request.onnxVariants ? ONNX_EXTRA_VARIANTS.filter((v) => request.onnxVariants!.includes(v)) : null,
    message: 'queued',
  });
  if (toHub) await platform.secrets.put(exportId, { hubToken: request.hubToken });
  try {
    await platform.queue.add(exportQueue, { exportId });
  } catch (err) {
    await platform.secrets.drop(exportId);
    await platform.exports.update(exportId, { status: 'failed', message: 'the job queue was not available', finished_at: new Date() });
    throw new ServiceUnavailable('queue', `the job queue is not available (${(err as Error).message}); try again later`);
  }
  return exportId;
}
