// Export rows: one per POST /exports. Reads by job filter on user_id; the worker-side methods (claim,
// finish, recovery) act on the export the queue named, by id alone.
import type { Database, Queryable } from './database.ts';
import { guardedUpdate, type Bind } from './guarded-update.ts';
import type { WebhooksRepository } from './webhooks-repository.ts';
import { EXPORT_WORK, holdLost, listLostHolds, type LostHold } from './work-rows.ts';
import type { ExportStatus, OnnxExtraVariant } from '@ftp/schema';

/** The status enum of the API (@ftp/schema), as rows store it; and what an ONNX export may write beside fp32. */
export type { ExportStatus, OnnxExtraVariant };
export type ExportKind = 'adapter' | 'merged' | 'gguf' | 'onnx';

/** What an ONNX export measured of one variant against transformers' greedy tokens (#43). */
export interface OnnxVariantParity {
  variant: 'fp32' | 'fp16' | 'q4' | 'q4f16';
  /** Mean over the prompts of the share of tokens before the first divergence (1: every token equal). */
  agreement: number;
  /** Where the first prompt that diverged did so, or null when none did. */
  first_divergence: { prompt: number; token: number } | null;
  prompts: number;
  tokens_per_prompt: number;
  execution_provider: string;
  /** false below 50% agreement: the variant is kept but says it should not be used. */
  usable: boolean;
}

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
  /** The checkpoint exported; null: the job's final model. */
  checkpoint_step: number | null;
  /** A Tinker run's sampler weights exported (job_id is then the run's id); null for a job's models. */
  checkpoint_name: string | null;
  status: ExportStatus;
  destination: Array<'cloud' | 'hub'>;
  hub_repo_id: string | null;
  gguf_quantization: string | null;
  /** An ONNX export's variants beside fp32 as asked; null: all three (and for other types). */
  onnx_variants: OnnxExtraVariant[] | null;
  message: string | null;
  /** While it runs: the stage its worker is at and for how long (null before the first and once it ended). */
  progress: ExportProgress | null;
  artifacts: ExportArtifactRow[];
  /** An ONNX export's measured agreement per variant; null for other types and until measured. */
  parity: OnnxVariantParity[] | null;
  worker_id: string | null;
  started_at: Date;
  finished_at: Date | null;
  updated_at: Date;
}

export interface ExportProgress {
  stage: string;
  elapsed_seconds: number;
}

type ExportUpdate = Partial<Pick<ExportRow, 'status' | 'message' | 'progress' | 'artifacts' | 'parity' | 'worker_id' | 'finished_at'>>;
const JSON_COLUMNS = new Set(['artifacts', 'progress', 'parity']);

export class ExportsRepository {
  constructor(
    private readonly db: Database,
    private readonly webhooks: WebhooksRepository,
  ) {}

  async insert(row: Pick<ExportRow, 'export_id' | 'job_id' | 'user_id' | 'type' | 'destination' | 'hub_repo_id' | 'gguf_quantization' | 'message'> & Partial<Pick<ExportRow, 'checkpoint_step' | 'checkpoint_name' | 'onnx_variants'>>): Promise<ExportRow> {
    const [created] = await this.db.query<ExportRow>(
      `INSERT INTO exports (export_id, job_id, user_id, type, status, destination, hub_repo_id, gguf_quantization, message, checkpoint_step, checkpoint_name, onnx_variants)
       VALUES ($1, $2, $3, $4, 'running', $5::json, $6, $7, $8, $9, $10, $11::json) RETURNING *`,
      [row.export_id, row.job_id, row.user_id, row.type, JSON.stringify(row.destination), row.hub_repo_id, row.gguf_quantization, row.message, row.checkpoint_step ?? null, row.checkpoint_name ?? null, row.onnx_variants ? JSON.stringify(row.onnx_variants) : null],
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

  /** The caller's most recent completed export of `type` of one checkpoint of a job (a step), or of a Tinker run's
   *  sampler weights (a name). */
  async latestOfCheckpoint(userId: string, jobId: string, type: ExportKind, checkpoint: number | string): Promise<ExportRow | undefined> {
    const column = typeof checkpoint === 'number' ? 'checkpoint_step' : 'checkpoint_name';
    const [row] = await this.db.query<ExportRow>(
      `SELECT * FROM exports WHERE user_id = $1 AND job_id = $2 AND type = $3 AND ${column} = $4 AND status = 'completed'
       ORDER BY finished_at DESC, export_id DESC LIMIT 1`,
      [userId, jobId, type, checkpoint],
    );
    return row;
  }

  /** The caller's completed ONNX exports of the final models of the jobs named, newest first, for reading which of
   *  their variants are usable (the one whose folder a job's artifacts name is the one offered for download). */
  async completedOnnxOfJobs(userId: string, jobIds: readonly string[]): Promise<ExportRow[]> {
    if (jobIds.length === 0) return [];
    return this.db.query<ExportRow>(
      `SELECT * FROM exports WHERE user_id = $1 AND job_id = ANY($2) AND type = 'onnx' AND checkpoint_step IS NULL AND checkpoint_name IS NULL
         AND status = 'completed' ORDER BY finished_at DESC, export_id DESC`,
      [userId, [...jobIds]],
    );
  }

  /** Whether any export of the job is still running (queued or at work): the job's files are in use. */
  async anyRunning(jobId: string): Promise<boolean> {
    const rows = await this.db.query("SELECT 1 FROM exports WHERE job_id = $1 AND status = 'running' LIMIT 1", [jobId]);
    return rows.length > 0;
  }

  async listRunning(): Promise<ExportRow[]> {
    return this.db.query<ExportRow>("SELECT * FROM exports WHERE status = 'running' ORDER BY started_at, export_id");
  }

  /** Running exports taken by a worker whose hold is lost (work-rows.ts). Exports not taken yet (worker_id null)
   *  are waiting in the queue, not orphaned. */
  async listOrphaned(lost: LostHold): Promise<ExportRow[]> {
    return listLostHolds<ExportRow>(this.db, EXPORT_WORK, lost);
  }

  /** Hands an orphaned export back to the queue, only while it is still on that worker and its hold is still lost. */
  async releaseOrphan(row: ExportRow, message: string, lost: LostHold): Promise<ExportRow | undefined> {
    return this.apply(row.export_id, { worker_id: null, message }, (bind) => [`worker_id = ${bind(row.worker_id)}`, holdLost(EXPORT_WORK, lost, bind)]);
  }

  /** A worker takes a queued export (running, not held by any worker); undefined when it is finished, gone or
   *  already taken (the same export queued twice runs once). */
  async claim(exportId: string, workerId: string): Promise<ExportRow | undefined> {
    return this.apply(exportId, { worker_id: workerId, message: 'exporting', progress: null }, () => ['worker_id IS NULL']);
  }

  /** Updates a running export (with `onlyWorker`, only while that worker holds it); returns the new row, or
   *  undefined when it is no longer running, gone, or taken from that worker. */
  async update(exportId: string, update: ExportUpdate, onlyWorker?: string): Promise<ExportRow | undefined> {
    return this.apply(exportId, update, (bind) => (onlyWorker === undefined ? [] : [`worker_id = ${bind(onlyWorker)}`]));
  }

  /** The update; an export's end (completed, failed) also writes its webhook event in the same transaction (#42). */
  private apply(exportId: string, update: ExportUpdate, where: (bind: Bind) => string[]): Promise<ExportRow | undefined> {
    const run = (db: Queryable) =>
      guardedUpdate<ExportRow>(db, {
        table: 'exports', idColumn: 'export_id', id: exportId, set: update, jsonColumns: JSON_COLUMNS,
        where: (bind) => ["status = 'running'", ...where(bind)],
      });
    const status = update.status;
    if (status !== 'completed' && status !== 'failed') return run(this.db);
    return this.db.transaction(async (tx) => {
      const row = await run(tx);
      if (row) await this.webhooks.recordEvent(tx, row.user_id, `export.${status}`, { id: row.export_id, job_id: row.job_id, type: row.type });
      return row;
    });
  }
}
