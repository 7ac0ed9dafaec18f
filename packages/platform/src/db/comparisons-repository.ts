// Rows of pairwise comparisons (POST /comparisons): written once, when a comparison is done. Every method takes the
// caller's user_id and filters on it, so another user's comparison reads exactly like an unknown one.
import type { Database } from './database.ts';
import { newestFirstPage } from './pages.ts';

export interface ComparisonRow {
  comparison_id: string;
  user_id: string;
  processed_dataset_id: string;
  job_a: string | null;
  job_b: string | null;
  /** The request without credentials. */
  request: Record<string, unknown>;
  /** The summary, the verdicts and the warnings (ComparisonResult). */
  result: Record<string, unknown>;
  elapsed_seconds: number;
  created_at: Date;
}

export class ComparisonsRepository {
  constructor(private readonly db: Database) {}

  async insert(row: Omit<ComparisonRow, 'created_at'>): Promise<ComparisonRow> {
    const [created] = await this.db.query<ComparisonRow>(
      `INSERT INTO comparisons (comparison_id, user_id, processed_dataset_id, job_a, job_b, request, result, elapsed_seconds)
       VALUES ($1, $2, $3, $4, $5, $6::json, $7::json, $8) RETURNING *`,
      [row.comparison_id, row.user_id, row.processed_dataset_id, row.job_a, row.job_b, JSON.stringify(row.request), JSON.stringify(row.result), row.elapsed_seconds],
    );
    return created!;
  }

  async get(userId: string, comparisonId: string): Promise<ComparisonRow | undefined> {
    const [row] = await this.db.query<ComparisonRow>('SELECT * FROM comparisons WHERE user_id = $1 AND comparison_id = $2', [userId, comparisonId]);
    return row;
  }

  /** One page of the caller's comparisons, newest first. */
  listPage(userId: string, page: { after?: string | undefined; limit: number }): Promise<{ rows: ComparisonRow[]; hasMore: boolean }> {
    return newestFirstPage<ComparisonRow>(this.db, 'comparisons', 'comparison_id', userId, page);
  }

  /** Whether it was there to delete. */
  async delete(userId: string, comparisonId: string): Promise<boolean> {
    const rows = await this.db.query<{ comparison_id: string }>('DELETE FROM comparisons WHERE user_id = $1 AND comparison_id = $2 RETURNING comparison_id', [userId, comparisonId]);
    return rows.length > 0;
  }

  /** Deletes the caller's comparisons of a job (either side) or of a processed dataset; returns the ids removed. */
  async deleteFor(userId: string, of: { jobId: string } | { processedDatasetId: string }): Promise<string[]> {
    const [where, value] = 'jobId' in of ? ['(job_a = $2 OR job_b = $2)', of.jobId] : ['processed_dataset_id = $2', of.processedDatasetId];
    const rows = await this.db.query<{ comparison_id: string }>(`DELETE FROM comparisons WHERE user_id = $1 AND ${where} RETURNING comparison_id`, [userId, value]);
    return rows.map((r) => r.comparison_id);
  }
}
