// Stored rows → interface.md 2.16 (export details and list items) and the export record (latest_export).
import type { ExportRow, TrainingJobRow } from '@ftp/platform';
import type { ExportDetails, ExportRecord, ExportSummary } from '@ftp/schema';

export function presentExportRecord(row: ExportRow): ExportRecord {
  return {
    export_id: row.export_id,
    job_id: row.job_id,
    type: row.type,
    status: row.status,
    started_at: new Date(row.started_at).toISOString(),
    destination: row.destination,
    hub_repo_id: row.hub_repo_id,
    message: row.message,
    artifacts: row.artifacts,
    finished_at: row.finished_at ? new Date(row.finished_at).toISOString() : null,
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

export function presentExportSummary(job: TrainingJobRow): ExportSummary {
  return {
    job_id: job.job_id,
    job_name: job.job_name,
    user_id: job.user_id,
    adapter_path: job.adapter_path,
    base_model_id: job.base_model_id,
    modality: job.modality,
    artifacts: job.artifacts,
  };
}

export function presentExportDetails(job: TrainingJobRow, latest: ExportRow | undefined): ExportDetails {
  return { ...presentExportSummary(job), latest_export: latest ? presentExportRecord(latest) : null };
}

/** Whether a job has anything to show in GET /exports. */
export function hasArtifacts(job: TrainingJobRow): boolean {
  return [job.artifacts.file, job.artifacts.raw, job.artifacts.hub].some((group) => Object.values(group).some(Boolean));
}
