// Stored job rows → interface.md 2.13 plus decisions.md's extra fields.
import type { ExportRow, TrainingJobRow } from '@ftp/platform';
import type { TrainingJob } from '@ftp/schema';
import { presentExportRecord } from '@ftp/export';

/** `latestExport`: the job's most recent export (platform.exports.latestForJob), if any. */
export function presentJob(job: TrainingJobRow, latestExport?: ExportRow): TrainingJob {
  const progress = job.progress
    ? { step: job.progress.step, total_steps: job.progress.total_steps, epoch: job.progress.epoch, loss: job.progress.loss, eta_seconds: job.progress.eta_seconds }
    : null;
  const metrics = job.metrics
    ? {
        eval_loss: job.metrics.eval_loss ?? null,
        perplexity: job.metrics.perplexity ?? null,
        accuracy: job.metrics.accuracy ?? null,
        eval_runtime: job.metrics.eval_runtime ?? null,
      }
    : null;
  return {
    job_id: job.job_id,
    job_name: job.job_name,
    status: job.status,
    modality: job.modality,
    tracker_url: job.tracker_url,
    processed_dataset_id: job.processed_dataset_id,
    adapter_path: job.adapter_path,
    base_model_id: job.base_model_id,
    gguf_path: job.gguf_path,
    metrics,
    error: job.error,
    created_at: new Date(job.created_at).toISOString(),
    updated_at: new Date(job.updated_at).toISOString(),
    progress,
    artifacts: job.artifacts,
    latest_export: latestExport ? presentExportRecord(latestExport) : null,
  };
}
