// Stored rows → the shapes the APIs answer with: a training job (interface.md 2.13 + decisions.md), export
// details, list items and records (2.16), and a worker (decisions.md "Scaled out"). The training and export
// services both present jobs with their latest export, so the presenters live here, once.
import type { CheckpointRow, ExportRow, JobProgressRow, TrainingJobRow, WorkerRow } from '@ftp/platform';
import { jobConfig, type Checkpoint, type ExportDetails, type ExportRecord, type ExportSummary, type PreflightReport, type QueueLane, type TrainingJob, type WorkerInfo } from '@ftp/schema';

import { appliedTrainingConfig, trainerOf } from './applied-config.ts';
import type { LaneState } from '../runtime/index.ts';

export { appliedTrainingConfig, trainerOf };

const iso = (value: Date | string): string => new Date(value).toISOString();

/** A figure as a response may carry it: a finite number, else null (JSON has no NaN or Infinity). */
export const finiteOrNull = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

/** A job's progress as it is served, whatever its row holds (#56: a worker killed after the last step and re-queued ran
 *  a step 51 of 50 and stored eta -0.1): a step is never past the total (the total is at least the steps run), an ETA
 *  never negative, a figure never NaN or infinite. */
export function presentProgress(progress: JobProgressRow) {
  const step = Math.max(0, Math.round(finiteOrNull(progress.step) ?? 0));
  const total = finiteOrNull(progress.total_steps);
  const eta = finiteOrNull(progress.eta_seconds);
  const epoch = finiteOrNull(progress.epoch);
  return {
    step,
    total_steps: total === null ? null : Math.max(Math.round(total), step),
    epoch: epoch === null ? null : Math.max(0, epoch),
    loss: finiteOrNull(progress.loss),
    eta_seconds: eta === null ? null : Math.max(0, eta),
    ...(progress.reward !== undefined ? { reward: finiteOrNull(progress.reward) } : {}),
  };
}

export function presentExportRecord(row: ExportRow): ExportRecord {
  return {
    export_id: row.export_id,
    job_id: row.job_id,
    type: row.type,
    checkpoint_step: row.checkpoint_step,
    status: row.status,
    started_at: iso(row.started_at),
    destination: row.destination,
    hub_repo_id: row.hub_repo_id,
    message: row.message,
    progress: row.status === 'running' ? row.progress : null,
    artifacts: row.artifacts,
    parity: row.parity,
    finished_at: row.finished_at ? iso(row.finished_at) : null,
    updated_at: iso(row.updated_at),
    checkpoint_name: row.checkpoint_name,
  };
}

/** `latestExport`: the job's most recent export (platform.exports.latestForJob), if any; `jobsAhead`: for a queued
 *  job, platform.jobs.queuedAhead's count. */
export function presentJob(job: TrainingJobRow, latestExport?: ExportRow, jobsAhead?: number): TrainingJob {
  const progress = job.progress ? presentProgress(job.progress) : null;
  const metrics = job.metrics
    ? {
        eval_loss: finiteOrNull(job.metrics.eval_loss),
        perplexity: finiteOrNull(job.metrics.perplexity),
        accuracy: finiteOrNull(job.metrics.accuracy),
        eval_runtime: finiteOrNull(job.metrics.eval_runtime),
        ...(job.metrics.reward !== undefined ? { reward: finiteOrNull(job.metrics.reward) } : {}),
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
    created_at: iso(job.created_at),
    updated_at: iso(job.updated_at),
    started_at: job.started_at ? iso(job.started_at) : null,
    finished_at: job.finished_at ? iso(job.finished_at) : null,
    jobs_ahead: job.status === 'queued' ? (jobsAhead ?? null) : null,
    progress,
    artifacts: job.artifacts,
    latest_export: latestExport ? presentExportRecord(latestExport) : null,
    parent: job.parent_job_id ? { job_id: job.parent_job_id, checkpoint_step: job.parent_checkpoint_step } : null,
    best_step: job.best_step,
    training_config: appliedTrainingConfig(jobConfig(job), job.preflight as PreflightReport | null),
    preflight: job.preflight as PreflightReport | null,
    sweep_id: job.sweep_id,
    pruned: job.prune_reason !== null && job.status === 'completed',
  };
}

/** `onnxExports`: the job's completed ONNX exports, newest first (platform.exports.completedOnnxOfJobs); the one that
 *  wrote the folder the job's artifacts name says which of its model files are usable. */
export function presentExportSummary(job: TrainingJobRow, onnxExports: readonly ExportRow[] = []): ExportSummary {
  const folder = job.artifacts.raw.onnx;
  const wrote = folder ? onnxExports.find((e) => e.job_id === job.job_id && e.artifacts.some((a) => a.variant === 'raw' && a.path === folder)) : undefined;
  return {
    job_id: job.job_id,
    job_name: job.job_name,
    user_id: job.user_id,
    adapter_path: job.adapter_path,
    base_model_id: job.base_model_id,
    modality: job.modality,
    artifacts: job.artifacts,
    onnx_variants: wrote?.parity ?? null,
  };
}

export function presentExportDetails(job: TrainingJobRow, latest: ExportRow | undefined, onnxExports: readonly ExportRow[] = []): ExportDetails {
  return { ...presentExportSummary(job, onnxExports), latest_export: latest ? presentExportRecord(latest) : null };
}

/** Whether the job has anything exported: a file to download or a hub repo. The folders training itself leaves
 *  (`raw`) are no export: a list of exports showing every completed job would offer downloads that do not exist. */
export function hasExports(job: TrainingJobRow): boolean {
  return [job.artifacts.file, job.artifacts.hub].some((group) => Object.values(group).some(Boolean));
}

/** A lane as GET /workers shows it: BullMQ's waiting, prioritized and delayed entries all wait for a worker. */
export function presentLane(lane: LaneState): QueueLane {
  const { waiting = 0, prioritized = 0, delayed = 0, active = 0 } = lane.counts;
  return { name: lane.name, waiting: waiting + prioritized + delayed, active, oldest_waiting_seconds: Math.round(lane.oldestWaitingSeconds * 10) / 10, workers: lane.workers };
}

export function presentWorker(row: WorkerRow): WorkerInfo {
  return {
    worker_id: row.worker_id,
    host: row.host,
    pid: row.pid,
    devices: row.devices,
    queues: row.queues,
    current_job_id: row.current_jobs[0] ?? null,
    current_jobs: row.current_jobs,
    preparing: row.preparing ?? { job_id: null, waiting: [] },
    started_at: iso(row.started_at),
    last_seen_at: iso(row.heartbeat_at),
  };
}

export function presentCheckpoint(row: CheckpointRow): Checkpoint {
  return { step: row.step, epoch: row.epoch, train_loss: finiteOrNull(row.train_loss), eval_loss: finiteOrNull(row.eval_loss), created_at: iso(row.created_at), size_bytes: row.size_bytes };
}
