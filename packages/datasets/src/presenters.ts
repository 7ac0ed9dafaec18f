// Stored rows → the response shapes of interface.md 2.1–2.4 (blob keys become URIs, dates ISO strings).
import type { BlobStore, ProcessedDatasetRow, RawDatasetRow } from '@ftp/platform';
import type { DatasetSummary, ProcessedDataset, ProcessingResult, SplitInfo, UploadList, UploadResult } from '@ftp/schema';

export function presentUpload(row: RawDatasetRow, blobs: BlobStore): UploadResult {
  return {
    dataset_id: row.dataset_id,
    filename: row.filename,
    cloud_path: blobs.uri(row.blob_key),
    size_bytes: row.size_bytes,
    sample: row.sample,
    columns: row.columns,
    num_examples: row.num_examples,
    delimiter: row.delimiter,
    warnings: row.warnings,
  };
}

export function presentUploadList(rows: RawDatasetRow[], blobs: BlobStore): UploadList {
  return { uploads: rows.map((row) => ({ ...presentUpload(row, blobs), created_at: new Date(row.created_at).toISOString() })) };
}

function splitInfos(row: ProcessedDatasetRow, blobs: BlobStore): SplitInfo[] {
  return row.splits.map((s) => ({ split_name: s.split_name, num_rows: s.num_rows, path: blobs.uri(s.blob_key), samples: s.samples }));
}

function commonFields(row: ProcessedDatasetRow) {
  return {
    dataset_name: row.dataset_name,
    dataset_subset: row.dataset_subset,
    dataset_source: row.dataset_source,
    modality: row.modality,
    dataset_id: row.dataset_id,
    processed_dataset_id: row.processed_dataset_id,
    processing_mode: row.processing_mode,
    created_at: new Date(row.created_at).toISOString(),
    ...(row.augmentation ? { augmentation: row.augmentation } : {}),
    status: row.status,
    ...(row.progress ? { progress: row.progress } : {}),
    ...(row.error ? { error: row.error } : {}),
  };
}

export function presentProcessedDataset(row: ProcessedDatasetRow, blobs: BlobStore): ProcessedDataset {
  return { ...commonFields(row), splits: splitInfos(row, blobs) };
}

export function presentDatasetSummary(row: ProcessedDatasetRow): DatasetSummary {
  return { ...commonFields(row), num_examples: row.num_examples, splits: row.splits.map((s) => s.split_name) };
}

export function presentProcessingResult(row: ProcessedDatasetRow, blobs: BlobStore): ProcessingResult {
  return { ...presentDatasetSummary(row), full_splits: splitInfos(row, blobs) };
}
