// Rows of raw uploads and processed datasets. Every method takes the caller's user_id and filters on
// it, so another user's id reads exactly like an unknown one.
import type { AugmentationCounts, DatasetProgress, DatasetStatus, Delimiter } from '@ftp/schema';
import type { Database, Queryable } from './database.ts';
import { guardedUpdate, type Bind } from './guarded-update.ts';
import { DATASET_WORK, holdLost, listLostHolds, type LostHold } from './work-rows.ts';

export interface RawDatasetRow {
  dataset_id: string;
  user_id: string;
  filename: string;
  format: string;
  blob_key: string;
  size_bytes: number;
  num_examples: number;
  columns: string[];
  sample: Record<string, unknown>[];
  /** What the file is for (/v1/files' purpose): training data, a batch's input, or a batch's output. */
  purpose: FilePurposeColumn;
  /** What delimited text was read with; null for JSON, JSONL and Parquet. */
  delimiter: Delimiter | null;
  /** Sentences about what may have been read otherwise than meant. */
  warnings: string[];
  created_at: Date;
}

/** An upload to record: no delimiter and no warnings unless given. */
export type FilePurposeColumn = 'fine-tune' | 'batch' | 'batch_output';
export type NewRawDatasetRow = Omit<RawDatasetRow, 'created_at' | 'delimiter' | 'warnings' | 'purpose'> & Partial<Pick<RawDatasetRow, 'delimiter' | 'warnings' | 'purpose'>>;

export interface StoredSplit {
  split_name: string;
  num_rows: number;
  /** Blob key of the split's JSONL file. */
  blob_key: string;
  samples: Record<string, unknown>[];
}

export interface ProcessedDatasetRow {
  processed_dataset_id: string;
  user_id: string;
  dataset_id: string;
  dataset_name: string;
  dataset_subset: string;
  dataset_source: 'upload' | 'hub';
  processing_mode: 'language_modeling' | 'prompt_only' | 'preference';
  modality: 'text' | 'vision';
  config: Record<string, unknown>;
  splits: StoredSplit[];
  num_examples: number;
  columns: string[];
  blob_prefix: string;
  /** Per augmentation method, rows added and rows it could not make; null when not augmented. */
  augmentation: AugmentationCounts | null;
  /** ready (splits written), processing (a worker augments it with a language model), failed (`error` says why). */
  status: DatasetStatus;
  /** While processing (and after): rows read and new rows made, per method. */
  progress: DatasetProgress | null;
  error: string | null;
  /** The worker processing it; null when ready, failed, or waiting in the queue. */
  worker_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A processed dataset to insert: ready unless said otherwise; `augmentation` may be left out (not augmented). */
export type NewProcessedDatasetRow = Omit<ProcessedDatasetRow, 'created_at' | 'updated_at' | 'augmentation' | 'status' | 'progress' | 'error' | 'worker_id'> &
  Partial<Pick<ProcessedDatasetRow, 'augmentation' | 'status' | 'progress'>>;

/** What a worker writes when the splits of a processing dataset are stored. */
export type FinishedProcessing = Pick<ProcessedDatasetRow, 'splits' | 'num_examples' | 'augmentation' | 'progress'>;

const JSON_COLUMNS = new Set(['config', 'splits', 'columns', 'augmentation', 'progress']);

export class DatasetsRepository {
  constructor(private readonly db: Database) {}

  async insertRaw(row: NewRawDatasetRow): Promise<RawDatasetRow> {
    const [created] = await this.db.query<RawDatasetRow>(
      `INSERT INTO raw_datasets (dataset_id, user_id, filename, format, blob_key, size_bytes, num_examples, columns, sample, delimiter, warnings, purpose)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::json, $9::json, $10, $11::json, $12) RETURNING *`,
      [row.dataset_id, row.user_id, row.filename, row.format, row.blob_key, row.size_bytes, row.num_examples,
        JSON.stringify(row.columns), JSON.stringify(row.sample), row.delimiter ?? null, JSON.stringify(row.warnings ?? []), row.purpose ?? 'fine-tune'],
    );
    return created!;
  }

  async getRaw(userId: string, datasetId: string): Promise<RawDatasetRow | undefined> {
    const [row] = await this.db.query<RawDatasetRow>(
      'SELECT * FROM raw_datasets WHERE user_id = $1 AND dataset_id = $2',
      [userId, datasetId],
    );
    return row;
  }

  /** Sets what an upload is for (/v1/files names the purpose in any order with the file). */
  async setPurpose(userId: string, datasetId: string, purpose: FilePurposeColumn): Promise<RawDatasetRow | undefined> {
    const [row] = await this.db.query<RawDatasetRow>('UPDATE raw_datasets SET purpose = $3 WHERE user_id = $1 AND dataset_id = $2 RETURNING *', [userId, datasetId, purpose]);
    return row;
  }

  /** The user's uploads, newest first; with `purpose`, only those for it (a purpose no file has lists none). */
  async listRaw(userId: string, purpose?: string): Promise<RawDatasetRow[]> {
    return this.db.query<RawDatasetRow>(
      'SELECT * FROM raw_datasets WHERE user_id = $1 AND ($2::text IS NULL OR purpose = $2) ORDER BY created_at DESC, dataset_id DESC',
      [userId, purpose ?? null],
    );
  }

  /** Removes the row of an upload (its blob is the caller's to delete); false when it is not the caller's. */
  async deleteRaw(userId: string, datasetId: string): Promise<boolean> {
    const rows = await this.db.query('DELETE FROM raw_datasets WHERE user_id = $1 AND dataset_id = $2 RETURNING dataset_id', [userId, datasetId]);
    return rows.length > 0;
  }

  async insertProcessed(row: NewProcessedDatasetRow, tx: Queryable = this.db): Promise<ProcessedDatasetRow> {
    const [created] = await tx.query<ProcessedDatasetRow>(
      `INSERT INTO processed_datasets (processed_dataset_id, user_id, dataset_id, dataset_name, dataset_subset,
         dataset_source, processing_mode, modality, config, splits, num_examples, columns, blob_prefix, augmentation, status, progress)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::json, $10::json, $11, $12::json, $13, $14::json, $15, $16::json) RETURNING *`,
      [row.processed_dataset_id, row.user_id, row.dataset_id, row.dataset_name, row.dataset_subset, row.dataset_source,
        row.processing_mode, row.modality, JSON.stringify(row.config), JSON.stringify(row.splits), row.num_examples,
        JSON.stringify(row.columns), row.blob_prefix, row.augmentation ? JSON.stringify(row.augmentation) : null,
        row.status ?? 'ready', row.progress ? JSON.stringify(row.progress) : null],
    );
    return created!;
  }

  async getProcessed(userId: string, processedDatasetId: string): Promise<ProcessedDatasetRow | undefined> {
    const [row] = await this.db.query<ProcessedDatasetRow>(
      'SELECT * FROM processed_datasets WHERE user_id = $1 AND processed_dataset_id = $2',
      [userId, processedDatasetId],
    );
    return row;
  }

  /** The caller's processed datasets, newest first. */
  async listProcessed(userId: string): Promise<ProcessedDatasetRow[]> {
    return this.db.query<ProcessedDatasetRow>(
      'SELECT * FROM processed_datasets WHERE user_id = $1 ORDER BY created_at DESC, processed_dataset_id DESC',
      [userId],
    );
  }

  /** The caller's processed datasets made from upload `datasetId`, oldest first. */
  async listProcessedFrom(userId: string, datasetId: string): Promise<ProcessedDatasetRow[]> {
    return this.db.query<ProcessedDatasetRow>(
      "SELECT * FROM processed_datasets WHERE user_id = $1 AND dataset_id = $2 AND dataset_source = 'upload' ORDER BY created_at, processed_dataset_id",
      [userId, datasetId],
    );
  }

  async deleteProcessed(userId: string, processedDatasetId: string): Promise<boolean> {
    const rows = await this.db.query(
      'DELETE FROM processed_datasets WHERE user_id = $1 AND processed_dataset_id = $2 RETURNING processed_dataset_id',
      [userId, processedDatasetId],
    );
    return rows.length > 0;
  }

  // A dataset a worker processes (status processing): taken, reported on, finished or failed, each only while that
  // worker holds it, so that a worker taken for dead cannot overwrite what its successor did.

  /** The row, whoever owns it: for the worker that processes it. */
  async getForWorker(processedDatasetId: string): Promise<ProcessedDatasetRow | undefined> {
    const [row] = await this.db.query<ProcessedDatasetRow>('SELECT * FROM processed_datasets WHERE processed_dataset_id = $1', [processedDatasetId]);
    return row;
  }

  /** A worker takes a processing dataset no worker holds; undefined when it is ready, failed, gone or taken. */
  async claimProcessing(processedDatasetId: string, workerId: string): Promise<ProcessedDatasetRow | undefined> {
    return this.applyProcessing(processedDatasetId, { worker_id: workerId, error: null }, () => ['worker_id IS NULL']);
  }

  /** Progress of the worker holding it; undefined when it no longer does (deleted, or taken for dead). */
  async reportProcessing(processedDatasetId: string, workerId: string, progress: DatasetProgress): Promise<ProcessedDatasetRow | undefined> {
    return this.applyProcessing(processedDatasetId, { progress }, (bind) => [`worker_id = ${bind(workerId)}`]);
  }

  /** The splits are stored: ready. */
  async finishProcessing(processedDatasetId: string, workerId: string, done: FinishedProcessing): Promise<ProcessedDatasetRow | undefined> {
    return this.applyProcessing(processedDatasetId, { ...done, status: 'ready', worker_id: null }, (bind) => [`worker_id = ${bind(workerId)}`]);
  }

  /** Failed with a sentence a person can act on; by the worker holding it, or by anyone when `workerId` is null. */
  async failProcessing(processedDatasetId: string, workerId: string | null, error: string): Promise<ProcessedDatasetRow | undefined> {
    return this.applyProcessing(processedDatasetId, { status: 'failed', error, worker_id: null }, (bind) => (workerId === null ? [] : [`worker_id = ${bind(workerId)}`]));
  }

  /** Back to the queue: its worker stops, or (`lost`: the watchdog, the reconciler) its worker's hold is lost. */
  async releaseProcessing(row: Pick<ProcessedDatasetRow, 'processed_dataset_id' | 'worker_id'>, lost?: LostHold): Promise<ProcessedDatasetRow | undefined> {
    return this.applyProcessing(row.processed_dataset_id, { worker_id: null, progress: null }, (bind) => [
      `worker_id = ${bind(row.worker_id)}`,
      ...(lost === undefined ? [] : [holdLost(DATASET_WORK, lost, bind)]),
    ]);
  }

  /** Processing datasets held by a worker whose hold is lost (work-rows.ts). */
  async listProcessingOrphaned(lost: LostHold): Promise<ProcessedDatasetRow[]> {
    return listLostHolds<ProcessedDatasetRow>(this.db, DATASET_WORK, lost);
  }

  /** Processing datasets no worker holds: waiting in the queue (the in-process queue forgets them on restart). */
  async listProcessingPending(): Promise<ProcessedDatasetRow[]> {
    return this.db.query<ProcessedDatasetRow>(
      "SELECT * FROM processed_datasets WHERE status = 'processing' AND worker_id IS NULL ORDER BY created_at, processed_dataset_id",
    );
  }

  private applyProcessing(processedDatasetId: string, set: Record<string, unknown>, where: (bind: Bind) => string[]): Promise<ProcessedDatasetRow | undefined> {
    return guardedUpdate<ProcessedDatasetRow>(this.db, {
      table: 'processed_datasets', idColumn: 'processed_dataset_id', id: processedDatasetId, set, jsonColumns: JSON_COLUMNS,
      where: (bind) => ["status = 'processing'", ...where(bind)],
    });
  }
}
