// Rows of raw uploads and processed datasets. Every method takes the caller's user_id and filters on
// it, so another user's id reads exactly like an unknown one.
import type { AugmentationCounts } from '@ftp/schema';
import type { Database, Queryable } from './database.ts';

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
  created_at: Date;
}

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
  created_at: Date;
}

/** A processed dataset to insert: `augmentation` may be left out (not augmented). */
export type NewProcessedDatasetRow = Omit<ProcessedDatasetRow, 'created_at' | 'augmentation'> & Partial<Pick<ProcessedDatasetRow, 'augmentation'>>;

export class DatasetsRepository {
  constructor(private readonly db: Database) {}

  async insertRaw(row: Omit<RawDatasetRow, 'created_at'>): Promise<RawDatasetRow> {
    const [created] = await this.db.query<RawDatasetRow>(
      `INSERT INTO raw_datasets (dataset_id, user_id, filename, format, blob_key, size_bytes, num_examples, columns, sample)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::json, $9::json) RETURNING *`,
      [row.dataset_id, row.user_id, row.filename, row.format, row.blob_key, row.size_bytes, row.num_examples,
        JSON.stringify(row.columns), JSON.stringify(row.sample)],
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

  /** The caller's uploads, newest first. */
  async listRaw(userId: string): Promise<RawDatasetRow[]> {
    return this.db.query<RawDatasetRow>('SELECT * FROM raw_datasets WHERE user_id = $1 ORDER BY created_at DESC, dataset_id DESC', [userId]);
  }

  /** Removes the row of an upload (its blob is the caller's to delete); false when it is not the caller's. */
  async deleteRaw(userId: string, datasetId: string): Promise<boolean> {
    const rows = await this.db.query('DELETE FROM raw_datasets WHERE user_id = $1 AND dataset_id = $2 RETURNING dataset_id', [userId, datasetId]);
    return rows.length > 0;
  }

  async insertProcessed(row: NewProcessedDatasetRow, tx: Queryable = this.db): Promise<ProcessedDatasetRow> {
    const [created] = await tx.query<ProcessedDatasetRow>(
      `INSERT INTO processed_datasets (processed_dataset_id, user_id, dataset_id, dataset_name, dataset_subset,
         dataset_source, processing_mode, modality, config, splits, num_examples, columns, blob_prefix, augmentation)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::json, $10::json, $11, $12::json, $13, $14::json) RETURNING *`,
      [row.processed_dataset_id, row.user_id, row.dataset_id, row.dataset_name, row.dataset_subset, row.dataset_source,
        row.processing_mode, row.modality, JSON.stringify(row.config), JSON.stringify(row.splits), row.num_examples,
        JSON.stringify(row.columns), row.blob_prefix, row.augmentation ? JSON.stringify(row.augmentation) : null],
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

  async deleteProcessed(userId: string, processedDatasetId: string): Promise<boolean> {
    const rows = await this.db.query(
      'DELETE FROM processed_datasets WHERE user_id = $1 AND processed_dataset_id = $2 RETURNING processed_dataset_id',
      [userId, processedDatasetId],
    );
    return rows.length > 0;
  }
}
