// Export rows: one per POST /exports. Reads by job filter on user_id; the worker-side methods (claim,
// finish, recovery) act on the export the queue named, by id alone.
import type { Database } from './database.ts';

export type ExportStatus = 'running' | 'completed' | 'failed';
export type ExportKind = 'adapter' | 'merged' | 'gguf';

export interface ExportArtifactRow {
  type: ExportKind;
  /** Blob URI (file, raw) or repository URL (hub). */
  path: string;
  variant: 'file' | 'raw' | 'hub';
}

export interface ExportRow {
  export_id: string;
  job_id: string;
  user_id: string;
  type: ExportKind;
  status: ExportStatus;
  destination: Array<'cloud' | 'hub'>;
  hub_repo_id: string | null;
  gguf_quantization: string | null;
  message: string | null;
  artifacts: ExportArtifactRow[];
  worker_id: string | null;
  started_at: Date;
  finished_at: Date | null;
  updated_at: Date;
}

type ExportUpdate = Partial<Pick<ExportRow, 'status' | 'message' | 'artifacts' | 'worker_id' | 'finished_at'>>;
const JSON_COLUMNS = new Set(['artifacts']);

export class ExportsRepository {
  constructor(private readonly db: Database) {}

  async insert(row: Pick<ExportRow, 'export_id' | 'job_id' | 'user_id' | 'type' | 'destination' | 'hub_repo_id' | 'gguf_quantization' | 'message'>): Promise<ExportRow> {
    const [created] = await this.db.query<ExportRow>(
      `INSERT INTO exports (export_id, job_id, user_id, type, status, destination, hub_repo_id, gguf_quantization, message)
       VALUES ($1, $2, $3, $4, 'running', $5::json, $6, $7, $8) RETURNING *`,
      [row.export_id, row.job_id, row.user_id, row.type, JSON.stringify(row.destination), row.hub_repo_id, row.gguf_quantization, row.message],
    );
    return created!;
  }

  /** Worker side: the export the queue named, whoever owns it. */
  async getForWorker(exportId: string): Promise<ExportRow | undefined> {
    const [row] = await this.db.query<ExportRow>('SELECT * FROM exports WHERE export_id = $1', [exportId]);
    return row;
  }

  /** The most recent export of each of the caller's jobs named, by job id (jobs without one are absent). */
  async latestForJobs(userId: string, jobIds: readonly string[]): Promise<Map<string, ExportRow>> {
    if (jobIds.length === 0) return new Map();
    const rows = await this.db.query<ExportRow>(
      `SELECT DISTINCT ON (job_id) * FROM exports WHERE user_id = $1 AND job_id = ANY($2)
       ORDER BY job_id, started_at DESC, export_id DESC`,
      [userId, [...jobIds]],
    );
    return new Map(rows.map((r) => [r.job_id, r]));
  }

  async latestForJob(userId: string, jobId: string): Promise<ExportRow | undefined> {
    return (await this.latestForJobs(userId, [jobId])).get(jobId);
  }

  /** Whether any export of the job is still running (queued or at work): the job's files are in use. */
  async anyRunning(jobId: string): Promise<boolean> {
    const rows = await this.db.query("SELECT 1 FROM exports WHERE job_id = $1 AND status = 'running' LIMIT 1", [jobId]);
    return rows.length > 0;
  }

  async listRunning(): Promise<ExportRow[]> {
    return this.db.query<ExportRow>("SELECT * FROM exports WHERE status = 'running' ORDER BY started_at, export_id");
  }

  /** Updates a running export; returns the new row, or undefined when it is no longer running (or gone). */
  async update(exportId: string, update: ExportUpdate): Promise<ExportRow | undefined> {
    const entries = Object.entries(update).filter(([, v]) => v !== undefined);
    const sets = entries.map(([k], i) => `${k} = $${i + 2}${JSON_COLUMNS.has(k) ? '::json' : ''}`);
    const params: unknown[] = [exportId, ...entries.map(([k, v]) => (JSON_COLUMNS.has(k) && v !== null ? JSON.stringify(v) : v))];
    const [row] = await this.db.query<ExportRow>(
      `UPDATE exports SET ${[...sets, 'updated_at = now()'].join(', ')} WHERE export_id = $1 AND status = 'running' RETURNING *`,
      params,
    );
    return row;
  }
}
