// Training job rows and their event log. Reads by id filter on user_id; the worker-side methods (claim,
// progress, finish) act on a job the queue handed over, by id alone; the recovery methods act on jobs whose
// worker went silent (workers-repository.ts holds the heartbeats).
import type { Database, Queryable } from './database.ts';
import { newestFirstPage } from './pages.ts';
import { NotFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { guardedUpdate, type Bind } from './guarded-update.ts';
import type { ExportRow } from './exports-repository.ts';
import { holdLost, listLostHolds, TRAINING_WORK, type LostHold } from './work-rows.ts';
import { appendLogEvent, readLogEvents, type EventLogTable } from './event-log.ts';
import type { WebhooksRepository } from './webhooks-repository.ts';
import type { JobStatus } from '@ftp/schema';

/** The status enum of the API (@ftp/schema), as rows store it. */
export type { JobStatus };
export const RUNNING_STATUSES: readonly JobStatus[] = ['queued', 'preparing', 'training'];

export interface ArtifactGroupsRow {
  file: Partial<Record<'adapter' | 'merged' | 'gguf' | 'onnx', string>>;
  raw: Partial<Record<'adapter' | 'merged' | 'onnx', string>>;
  hub: Partial<Record<'adapter' | 'merged' | 'gguf' | 'onnx', string>>;
}

export interface JobProgressRow {
  step: number;
  total_steps: number | null;
  epoch: number | null;
  loss: number | null;
  eta_seconds: number | null;
  /** GRPO: the mean reward of the step. */
  reward?: number | null;
  learning_rate?: number | null;
  tokens_per_second?: number | null;
}

export interface TrainingJobRow {
  job_id: string;
  user_id: string;
  job_name: string;
  status: JobStatus;
  /** Null only for a /v1 job whose training file failed validation (it never ran). */
  processed_dataset_id: string | null;
  base_model_id: string;
  modality: 'text' | 'vision';
  training_config: Record<string, unknown>;
  progress: JobProgressRow | null;
  metrics: Record<string, number> | null;
  artifacts: ArtifactGroupsRow;
  adapter_path: string | null;
  gguf_path: string | null;
  tracker_url: string | null;
  error: string | null;
  worker_id: string | null;
  cancel_requested: boolean;
  /** The user asked a running job to pause: its worker checkpoints, stops and leaves it paused. */
  pause_requested: boolean;
  blob_prefix: string;
  /** training_config.from_job: the job (and checkpoint) this one continued from. */
  parent_job_id: string | null;
  parent_checkpoint_step: number | null;
  /** load_best_model_at_end: the step whose weights the job kept. */
  best_step: number | null;
  /** The pre-flight report its worker made before training (PreflightReport). */
  preflight: Record<string, unknown> | null;
  /** When the user cancelled it (it then ends failed with "cancelled by user"). */
  cancelled_at: Date | null;
  /** Created through the OpenAI-compatible surface: what only that face shows (OpenAiJobFacts in @ftp/jobs). */
  openai: Record<string, unknown> | null;
  /** The sweep (POST /sweeps) this job is a trial of. */
  sweep_id: string | null;
  /** Why its sweep's pruner stopped it: set, its worker ends training at the next step and the job completes there. */
  prune_reason: string | null;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/** Another user (OpenAI's project) allowed to run one checkpoint of a job (checkpoint_permissions). */
export interface CheckpointPermissionRow {
  permission_id: string;
  job_id: string;
  step: number;
  project_id: string;
  created_at: Date;
}

export interface CheckpointRow {
  job_id: string;
  step: number;
  epoch: number | null;
  train_loss: number | null;
  eval_loss: number | null;
  size_bytes: number;
  created_at: Date;
}

const JOB_EVENTS: EventLogTable = { table: 'job_events', idColumn: 'job_id' };

export interface JobEventRow {
  job_id: string;
  seq: number;
  kind: 'status' | 'progress' | 'metrics' | 'log';
  data: Record<string, unknown>;
  created_at: Date;
}

type JobUpdate = Partial<Pick<TrainingJobRow, 'status' | 'progress' | 'metrics' | 'artifacts' | 'adapter_path' | 'gguf_path' | 'tracker_url' | 'error' | 'worker_id' | 'started_at' | 'finished_at' | 'best_step' | 'preflight' | 'cancelled_at' | 'openai' | 'pause_requested'>>;
const JSON_COLUMNS = new Set(['progress', 'metrics', 'artifacts', 'preflight', 'openai']);

/** A new job row: queued, or (a /v1 job whose file failed validation) failed at once with its error. */
export type NewJobRow = Pick<TrainingJobRow, 'job_id' | 'user_id' | 'job_name' | 'processed_dataset_id' | 'base_model_id' | 'modality' | 'training_config' | 'blob_prefix' | 'tracker_url'> &
  Partial<Pick<TrainingJobRow, 'parent_job_id' | 'parent_checkpoint_step' | 'openai' | 'sweep_id' | 'preflight'>> & {
    failed?: { error: string };
    /** Log lines of what happened before the row existed (a /v1 job's file validation), logged before its status. */
    earlier?: string[];
  };
/** The webhook event a job's new status is (#42): OpenAI's for its ends, ours for its start; none for the rest. A
 *  cancelled job is failed with cancelled_at. */
export function jobEventType(status: JobStatus, row: Pick<TrainingJobRow, 'cancelled_at'>): string | undefined {
  if (status === 'completed') return 'fine_tuning.job.succeeded';
  if (status === 'failed') return row.cancelled_at ? 'fine_tuning.job.cancelled' : 'fine_tuning.job.failed';
  if (status === 'preparing') return 'fine_tuning.job.started';
  return undefined;
}

export class JobsRepository {
  constructor(
    private readonly db: Database,
    private readonly webhooks: WebhooksRepository,
  ) {}

  async insert(row: NewJobRow): Promise<TrainingJobRow> {
    return this.db.transaction((tx) => this.insertIn(tx, row));
  }

  private async insertIn(tx: Queryable, row: NewJobRow): Promise<TrainingJobRow> {
    const status = row.failed ? 'failed' : 'queued';
    const [created] = await tx.query<TrainingJobRow>(
      `INSERT INTO training_jobs (job_id, user_id, job_name, status, processed_dataset_id, base_model_id, modality, training_config, blob_prefix, tracker_url,
         parent_job_id, parent_checkpoint_step, openai, error, finished_at, sweep_id, preflight)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::json, $9, $10, $11, $12, $13::json, $14, $15, $16, $17::json) RETURNING *`,
      [row.job_id, row.user_id, row.job_name, status, row.processed_dataset_id, row.base_model_id, row.modality,
        JSON.stringify(row.training_config), row.blob_prefix, row.tracker_url, row.parent_job_id ?? null, row.parent_checkpoint_step ?? null,
        row.openai ? JSON.stringify(row.openai) : null, row.failed?.error ?? null, row.failed ? new Date() : null, row.sweep_id ?? null,
        row.preflight ? JSON.stringify(row.preflight) : null],
    );
    for (const message of row.earlier ?? []) await appendLogEvent(tx, JOB_EVENTS, row.job_id, 'log', { level: 'info', message });
    await appendLogEvent(tx, JOB_EVENTS, row.job_id, 'status', { status, ...(row.failed ? { error: row.failed.error } : {}) });
    // A /v1 job refused at once (its file failed validation) ended: its webhook goes out like any other end's.
    if (row.failed) await this.webhooks.recordEvent(tx, row.user_id, jobEventType('failed', created!)!, { id: row.job_id });
    return created!;
  }

  async get(userId: string, jobId: string): Promise<TrainingJobRow | undefined> {
    const [row] = await this.db.query<TrainingJobRow>('SELECT * FROM training_jobs WHERE user_id = $1 AND job_id = $2', [userId, jobId]);
    return row;
  }

  /** The caller's job; NotFound (404) when it does not exist or is another user's. */
  async getOwn(userId: string, jobId: string): Promise<TrainingJobRow> {
    const job = await this.get(userId, jobId);
    if (!job) throw new NotFound('training job', jobId);
    return job;
  }

  /** The caller's job with its most recent export, in one query (what GET /jobs/{id} and GET /exports/{id} show);
   *  NotFound (404) when the job does not exist or is another user's. */
  async getOwnWithLatestExport(userId: string, jobId: string): Promise<{ job: TrainingJobRow; latestExport?: ExportRow }> {
    const [row] = await this.db.query<TrainingJobRow & { latest_export: ExportRow | null }>(
      `SELECT j.*, e.latest_export FROM training_jobs j
       LEFT JOIN LATERAL (
         SELECT row_to_json(x) AS latest_export FROM exports x WHERE x.job_id = j.job_id AND x.user_id = j.user_id
         ORDER BY x.started_at DESC, x.export_id DESC LIMIT 1
       ) e ON true
       WHERE j.user_id = $1 AND j.job_id = $2`,
      [userId, jobId],
    );
    if (!row) throw new NotFound('training job', jobId);
    const { latest_export: latest, ...job } = row;
    // row_to_json writes timestamps as text; the row types say Date.
    const latestExport = latest ? { ...latest, started_at: new Date(latest.started_at), updated_at: new Date(latest.updated_at), finished_at: latest.finished_at ? new Date(latest.finished_at) : null } : undefined;
    return latestExport ? { job, latestExport } : { job };
  }

  /** Worker side: the job the queue named, whoever owns it. */
  async getForWorker(jobId: string): Promise<TrainingJobRow | undefined> {
    const [row] = await this.db.query<TrainingJobRow>('SELECT * FROM training_jobs WHERE job_id = $1', [jobId]);
    return row;
  }

  async list(userId: string): Promise<TrainingJobRow[]> {
    return this.db.query<TrainingJobRow>('SELECT * FROM training_jobs WHERE user_id = $1 ORDER BY created_at DESC, job_id DESC', [userId]);
  }

  /** One page of the caller's jobs, newest first. */
  listPage(userId: string, page: { after?: string; limit: number }): Promise<{ rows: TrainingJobRow[]; hasMore: boolean }> {
    return newestFirstPage<TrainingJobRow>(this.db, 'training_jobs', 'job_id', userId, page);
  }

  /** How many jobs the store holds in each status, by trainer (metrics: ftp_jobs). */
  async countByStatus(): Promise<Array<{ status: JobStatus; trainer: string; count: number }>> {
    return this.db.query(
      `SELECT status, coalesce(training_config->>'trainer_type', 'sft') AS trainer, count(*)::int AS count
       FROM training_jobs GROUP BY 1, 2`,
    );
  }

  /** The caller's jobs on processed dataset `processedDatasetId` in one of `statuses`, oldest first (what a dataset's
   *  deletion must not pull from under them). */
  async listOnDataset(userId: string, processedDatasetId: string, statuses: readonly JobStatus[]): Promise<TrainingJobRow[]> {
    return this.db.query<TrainingJobRow>(
      'SELECT * FROM training_jobs WHERE user_id = $1 AND processed_dataset_id = $2 AND status = ANY($3) ORDER BY created_at, job_id',
      [userId, processedDatasetId, statuses],
    );
  }

  async listByStatus(statuses: readonly JobStatus[]): Promise<TrainingJobRow[]> {
    return this.db.query<TrainingJobRow>('SELECT * FROM training_jobs WHERE status = ANY($1) ORDER BY created_at, job_id', [statuses]);
  }

  /** Updates a job; with `onlyIf`, only while it is in one of those states, and with `onlyWorker`, only while
   *  that worker holds it. Returns the new row, or undefined when a guard did not hold (the job was cancelled,
   *  or taken from a worker that went silent, meanwhile). */
  async update(jobId: string, update: JobUpdate, onlyIf?: readonly JobStatus[], onlyWorker?: string): Promise<TrainingJobRow | undefined> {
    return this.apply(jobId, update, (bind) => [
      ...(onlyIf ? [`status = ANY(${bind([...onlyIf])})`] : []),
      ...(onlyWorker !== undefined ? [`worker_id = ${bind(onlyWorker)}`] : []),
    ]);
  }

  /** For each queued job named: how many queued jobs of its lane (train, or session for a Tinker run), any user's,
   *  were submitted before it; the queue serves them in that order. Jobs not queued are absent. */
  async queuedAhead(jobIds: readonly string[]): Promise<Map<string, number>> {
    if (jobIds.length === 0) return new Map();
    const rows = await this.db.query<{ job_id: string; ahead: number }>(
      `SELECT job_id, ahead FROM (
         SELECT job_id, (row_number() OVER (PARTITION BY coalesce(training_config->>'trainer_type', 'sft') = 'tinker'
                                            ORDER BY created_at, job_id) - 1)::int AS ahead
         FROM training_jobs WHERE status = 'queued') q
       WHERE job_id = ANY($1)`,
      [[...jobIds]],
    );
    return new Map(rows.map((r) => [r.job_id, r.ahead]));
  }

  /** Records on a completed job what an export of it produced (its artifact groups, gguf_path). updated_at stays: the
   *  export is its own record with its own times, and the job did not change (#54: a console that read a run's time
   *  from updated_at saw it grow with every export). */
  async recordExported(jobId: string, exported: Pick<JobUpdate, 'artifacts' | 'gguf_path'>): Promise<TrainingJobRow | undefined> {
    return guardedUpdate<TrainingJobRow>(this.db, {
      table: 'training_jobs', idColumn: 'job_id', id: jobId, set: exported, jsonColumns: JSON_COLUMNS, touch: false,
      where: (bind) => [`status = ${bind('completed')}`],
    });
  }

  /** Running jobs (preparing, training) whose worker's hold is lost (work-rows.ts): it is silent, or let go of them. */
  async listOrphaned(lost: LostHold): Promise<TrainingJobRow[]> {
    return listLostHolds<TrainingJobRow>(this.db, TRAINING_WORK, lost);
  }

  /** Moves an orphaned job back to the queue or to failed, only while it is still running on the same worker and
   *  that worker's hold is still lost (so of several processes noticing, one acts, and a live worker keeps its job). */
  async releaseOrphan(job: TrainingJobRow, to: { status: 'queued' | 'paused' } | { status: 'failed'; error: string }, lost: LostHold): Promise<TrainingJobRow | undefined> {
    const update: JobUpdate =
      to.status === 'failed' ? { status: 'failed', error: to.error, finished_at: new Date() }
      : { status: to.status, worker_id: null, ...(to.status === 'paused' ? { pause_requested: false } : {}) };
    return this.apply(job.job_id, update, (bind) => [
      TRAINING_WORK.held,
      job.worker_id === null ? 'worker_id IS NULL' : `worker_id = ${bind(job.worker_id)}`,
      holdLost(TRAINING_WORK, lost, bind),
    ]);
  }

  /** The update; a status change also writes its event to the job's log and its webhook event (#42), in the same
   *  transaction, so every path that moves a job (the worker, a cancel, the reconciler, recovery) tells it once. */
  private async apply(jobId: string, update: JobUpdate, where: (bind: Bind) => string[]): Promise<TrainingJobRow | undefined> {
    const run = (db: Queryable) => guardedUpdate<TrainingJobRow>(db, { table: 'training_jobs', idColumn: 'job_id', id: jobId, set: update, jsonColumns: JSON_COLUMNS, where });
    const status = update.status;
    if (!status) return run(this.db);
    return this.db.transaction(async (tx) => {
      const row = await run(tx);
      if (!row) return undefined;
      await appendLogEvent(tx, JOB_EVENTS, jobId, 'status', { status, ...(update.error ? { error: update.error } : {}) });
      const type = jobEventType(status, row);
      if (type) await this.webhooks.recordEvent(tx, row.user_id, type, { id: jobId });
      return row;
    });
  }

  /** Asks the worker of a preparing or training job to pause it; undefined when it is not running there. */
  async requestPause(userId: string, jobId: string): Promise<TrainingJobRow | undefined> {
    const [row] = await this.db.query<TrainingJobRow>(
      `UPDATE training_jobs SET pause_requested = true, updated_at = now()
       WHERE user_id = $1 AND job_id = $2 AND status IN ('preparing', 'training') RETURNING *`,
      [userId, jobId],
    );
    return row;
  }

  /** A sweep's pruner stops a running trial: the reason is recorded (and said in its log) and its worker ends training
   *  at the next step, completing the job there; undefined when the job no longer runs or was pruned already. */
  async requestPrune(jobId: string, reason: string): Promise<TrainingJobRow | undefined> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx.query<TrainingJobRow>(
        `UPDATE training_jobs SET prune_reason = $2, updated_at = now() WHERE job_id = $1 AND prune_reason IS NULL AND status = ANY($3) RETURNING *`,
        [jobId, reason, [...RUNNING_STATUSES]],
      );
      if (row) await appendLogEvent(tx, JOB_EVENTS, jobId, 'log', { level: 'info', message: `pruned: ${reason}; training stops at its next step and the job completes there` });
      return row;
    });
  }

  /** Worker side: the jobs of these ids that exist, whoever owns them. */
  async getManyForWorker(jobIds: readonly string[]): Promise<TrainingJobRow[]> {
    if (jobIds.length === 0) return [];
    return this.db.query<TrainingJobRow>('SELECT * FROM training_jobs WHERE job_id = ANY($1)', [[...jobIds]]);
  }

  /** The trials of a sweep, by creation. */
  async listOfSweep(sweepId: string): Promise<TrainingJobRow[]> {
    return this.db.query<TrainingJobRow>('SELECT * FROM training_jobs WHERE sweep_id = $1 ORDER BY created_at, job_id', [sweepId]);
  }

  async requestCancel(userId: string, jobId: string): Promise<TrainingJobRow | undefined> {
    const [row] = await this.db.query<TrainingJobRow>(
      `UPDATE training_jobs SET cancel_requested = true, updated_at = now()
       WHERE user_id = $1 AND job_id = $2 AND status = ANY($3) RETURNING *`,
      [userId, jobId, [...RUNNING_STATUSES]],
    );
    return row;
  }

  /** Deletes the job and its export records (exports.job_id also holds Tinker run ids, so no foreign key cascades). */
  async delete(userId: string, jobId: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const rows = await tx.query('DELETE FROM training_jobs WHERE user_id = $1 AND job_id = $2 RETURNING job_id', [userId, jobId]);
      if (rows.length > 0) await tx.query('DELETE FROM exports WHERE job_id = $1', [jobId]);
      return rows.length > 0;
    });
  }

  /** The job's checkpoints stored whole, by step. */
  async checkpoints(jobId: string): Promise<CheckpointRow[]> {
    return this.db.query<CheckpointRow>('SELECT * FROM job_checkpoints WHERE job_id = $1 ORDER BY step', [jobId]);
  }

  /** The step of the job's newest stored checkpoint, where a resumed run continues; undefined when none is stored. */
  async lastCheckpointStep(jobId: string): Promise<number | undefined> {
    return (await this.checkpoints(jobId)).at(-1)?.step;
  }

  /** Lets each of `projectIds` run checkpoint `step` of the job; returns their permissions (one already granted is
   *  returned as it was). */
  async grantCheckpoint(jobId: string, step: number, projectIds: readonly string[]): Promise<CheckpointPermissionRow[]> {
    for (const projectId of projectIds) {
      await this.db.query(
        'INSERT INTO checkpoint_permissions (permission_id, job_id, step, project_id) VALUES ($1, $2, $3, $4) ON CONFLICT (job_id, step, project_id) DO NOTHING',
        [newId('cp'), jobId, step, projectId],
      );
    }
    return this.db.query<CheckpointPermissionRow>(
      'SELECT * FROM checkpoint_permissions WHERE job_id = $1 AND step = $2 AND project_id = ANY($3) ORDER BY created_at, permission_id',
      [jobId, step, [...projectIds]],
    );
  }

  /** The permissions of one checkpoint, oldest first. */
  async checkpointPermissions(jobId: string, step: number): Promise<CheckpointPermissionRow[]> {
    return this.db.query<CheckpointPermissionRow>('SELECT * FROM checkpoint_permissions WHERE job_id = $1 AND step = $2 ORDER BY created_at, permission_id', [jobId, step]);
  }

  /** Removes one permission of a checkpoint; false when it has no such permission. */
  async revokeCheckpoint(jobId: string, step: number, permissionId: string): Promise<boolean> {
    const rows = await this.db.query('DELETE FROM checkpoint_permissions WHERE job_id = $1 AND step = $2 AND permission_id = $3 RETURNING permission_id', [jobId, step, permissionId]);
    return rows.length > 0;
  }

  /** A job `userId` may run checkpoint `step` of: its own, or another user's that granted it that checkpoint. */
  async getForCheckpoint(userId: string, jobId: string, step: number): Promise<TrainingJobRow | undefined> {
    const [row] = await this.db.query<TrainingJobRow>(
      `SELECT j.* FROM training_jobs j WHERE j.job_id = $2 AND (j.user_id = $1
         OR EXISTS (SELECT 1 FROM checkpoint_permissions p WHERE p.job_id = j.job_id AND p.step = $3 AND p.project_id = $1))`,
      [userId, jobId, step],
    );
    return row;
  }

  async recordCheckpoint(row: Omit<CheckpointRow, 'created_at'>): Promise<void> {
    await this.db.query(
      `INSERT INTO job_checkpoints (job_id, step, epoch, train_loss, eval_loss, size_bytes) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (job_id, step) DO UPDATE SET epoch = EXCLUDED.epoch, train_loss = EXCLUDED.train_loss,
         eval_loss = EXCLUDED.eval_loss, size_bytes = EXCLUDED.size_bytes, created_at = now()`,
      [row.job_id, row.step, row.epoch, row.train_loss, row.eval_loss, row.size_bytes],
    );
  }

  async forgetCheckpoint(jobId: string, step: number): Promise<void> {
    await this.db.query('DELETE FROM job_checkpoints WHERE job_id = $1 AND step = $2', [jobId, step]);
  }

  /** The job's event log (status changes, progress, metrics) in order, after sequence number `afterSeq`. */
  async events(jobId: string, afterSeq = 0): Promise<JobEventRow[]> {
    return readLogEvents<JobEventRow>(this.db, JOB_EVENTS, jobId, afterSeq);
  }

  /** Adds an event after the job's last (event-log.ts: concurrent writers each get a number of their own). */
  async appendEvent(jobId: string, kind: JobEventRow['kind'], data: Record<string, unknown>): Promise<void> {
    await appendLogEvent(this.db, JOB_EVENTS, jobId, kind, data);
  }
}
