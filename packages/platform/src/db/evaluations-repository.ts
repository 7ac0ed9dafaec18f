// Rows of evaluations (POST /evaluation): what was scored with which model, and the result. Every method takes
// the caller's user_id and filters on it, so another user's evaluation reads exactly like an unknown one.
import type { Database } from './database.ts';
import type { WebhooksRepository } from './webhooks-repository.ts';

export interface EvaluationRow {
  evaluation_id: string;
  user_id: string;
  processed_dataset_id: string;
  split: string;
  job_id: string | null;
  model_source: 'adapter' | 'merged' | 'base';
  base_model_id: string;
  use_fast_engine: boolean;
  /** The request without credentials. */
  request: Record<string, unknown>;
  metrics: Record<string, unknown>;
  num_samples: number;
  samples: Record<string, unknown>[];
  warnings: unknown[];
  elapsed_seconds: number;
  created_at: Date;
}

export class EvaluationsRepository {
  constructor(
    private readonly db: Database,
    private readonly webhooks: WebhooksRepository,
  ) {}

  /** Records a finished evaluation and its webhook event (evaluation.completed, #42) in one transaction. */
  async insert(row: Omit<EvaluationRow, 'created_at'>): Promise<EvaluationRow> {
    return this.db.transaction(async (tx) => {
      const [created] = await tx.query<EvaluationRow>(
      `INSERT INTO evaluations (evaluation_id, user_id, processed_dataset_id, split, job_id, model_source, base_model_id,
         use_fast_engine, request, metrics, num_samples, samples, warnings, elapsed_seconds)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::json, $10::json, $11, $12::json, $13::json, $14) RETURNING *`,
      [row.evaluation_id, row.user_id, row.processed_dataset_id, row.split, row.job_id, row.model_source, row.base_model_id,
        row.use_fast_engine, JSON.stringify(row.request), JSON.stringify(row.metrics), row.num_samples,
        JSON.stringify(row.samples), JSON.stringify(row.warnings), row.elapsed_seconds],
      );
      await this.webhooks.recordEvent(tx, row.user_id, 'evaluation.completed', { id: row.evaluation_id, job_id: row.job_id });
      return created!;
    });
  }

  async get(userId: string, evaluationId: string): Promise<EvaluationRow | undefined> {
    const [row] = await this.db.query<EvaluationRow>('SELECT * FROM evaluations WHERE user_id = $1 AND evaluation_id = $2', [userId, evaluationId]);
    return row;
  }

  /** The caller's evaluations, newest first. */
  async list(userId: string): Promise<EvaluationRow[]> {
    return this.db.query<EvaluationRow>('SELECT * FROM evaluations WHERE user_id = $1 ORDER BY created_at DESC, evaluation_id DESC', [userId]);
  }

  /** Deletes the caller's evaluations of a job or of a processed dataset (their samples hold its rows and the
   *  model's answers); returns the ids removed. */
  async deleteFor(userId: string, of: { jobId: string } | { processedDatasetId: string }): Promise<string[]> {
    const [column, value] = 'jobId' in of ? ['job_id', of.jobId] : ['processed_dataset_id', of.processedDatasetId];
    const rows = await this.db.query<{ evaluation_id: string }>(
      `DELETE FROM evaluations WHERE user_id = $1 AND ${column} = $2 RETURNING evaluation_id`,
      [userId, value],
    );
    return rows.map((r) => r.evaluation_id);
  }
}
