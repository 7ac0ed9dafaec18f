// Sweeps (POST /sweeps) and their trials as told to the study. A sweep is work a worker holds on its lane `sweep`
// (claim; the watchdog and the reconciler hand it back when its worker is gone, and the next holder goes on from what
// is recorded here and in the study). Reads by id filter on user_id; the worker-side methods act on the sweep the
// queue named.
import type { Database } from './database.ts';
import { guardedUpdate, type Bind } from './guarded-update.ts';
import { holdLost, listLostHolds, type LostHold, type WorkTable } from './work-rows.ts';
import type { SweepStatus } from '@ftp/schema';

export type { SweepStatus };

export const SWEEP_WORK: WorkTable = { table: 'sweeps', idColumn: 'sweep_id', waiting: "status = 'queued'", held: "status = 'running'" };

export interface SweepRow {
  sweep_id: string;
  user_id: string;
  name: string;
  status: SweepStatus;
  /** The request as accepted, defaults filled in, without hub_token or a tracker api_key (SweepCreateRequest). */
  request: Record<string, unknown>;
  best_job_id: string | null;
  best_value: number | null;
  error: string | null;
  worker_id: string | null;
  cancel_requested: boolean;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
  /** Its Optuna study was deleted (or never existed to be kept): set once the sweep has ended and its study is gone. */
  study_deleted: boolean;
}

export type TrialState = 'running' | 'completed' | 'pruned' | 'failed';

export interface SweepTrialRow {
  sweep_id: string;
  trial: number;
  job_id: string | null;
  params: Record<string, unknown>;
  state: TrialState;
  value: number | null;
  /** The objective reported to the pruner, by evaluation step. */
  steps: Record<string, number>;
  error: string | null;
  updated_at: Date;
}

type SweepUpdate = Partial<Pick<SweepRow, 'status' | 'best_job_id' | 'best_value' | 'error' | 'worker_id' | 'finished_at'>>;
type TrialUpdate = Partial<Pick<SweepTrialRow, 'state' | 'value' | 'steps' | 'error'>>;

export class SweepsRepository {
  constructor(private readonly db: Database) {}

  async insert(row: Pick<SweepRow, 'sweep_id' | 'user_id' | 'name' | 'request'>): Promise<SweepRow> {
    const [created] = await this.db.query<SweepRow>(
      'INSERT INTO sweeps (sweep_id, user_id, name, request) VALUES ($1, $2, $3, $4::json) RETURNING *',
      [row.sweep_id, row.user_id, row.name, JSON.stringify(row.request)],
    );
    return created!;
  }

  async get(userId: string, sweepId: string): Promise<SweepRow | undefined> {
    const [row] = await this.db.query<SweepRow>('SELECT * FROM sweeps WHERE user_id = $1 AND sweep_id = $2', [userId, sweepId]);
    return row;
  }

  /** Worker side: the sweep the queue named, whoever owns it. */
  async getForWorker(sweepId: string): Promise<SweepRow | undefined> {
    const [row] = await this.db.query<SweepRow>('SELECT * FROM sweeps WHERE sweep_id = $1', [sweepId]);
    return row;
  }

  async list(userId: string): Promise<SweepRow[]> {
    return this.db.query<SweepRow>('SELECT * FROM sweeps WHERE user_id = $1 ORDER BY created_at DESC, sweep_id DESC', [userId]);
  }

  /** The caller's queued or running sweeps whose trials train on this processed dataset. */
  async listUnfinishedOnDataset(userId: string, processedDatasetId: string): Promise<SweepRow[]> {
    return this.db.query<SweepRow>(
      "SELECT * FROM sweeps WHERE user_id = $1 AND status IN ('queued', 'running') AND request->'training_request'->>'processed_dataset_id' = $2 ORDER BY created_at, sweep_id",
      [userId, processedDatasetId],
    );
  }

  /** Queued sweeps, oldest first (the in-process queue's entries after a restart). */
  async listWaiting(): Promise<SweepRow[]> {
    return this.db.query<SweepRow>(`SELECT * FROM sweeps WHERE ${SWEEP_WORK.waiting} ORDER BY created_at, sweep_id`);
  }

  /** A worker takes a queued sweep; undefined when it is no longer queued. */
  claim(sweepId: string, workerId: string): Promise<SweepRow | undefined> {
    return this.apply(sweepId, { status: 'running', worker_id: workerId }, () => ["status = 'queued'"]);
  }

  /** Updates a running sweep while `workerId` holds it; undefined when it is no longer running there. */
  update(sweepId: string, update: SweepUpdate, workerId: string): Promise<SweepRow | undefined> {
    return this.apply(sweepId, update, (bind) => ["status = 'running'", `worker_id = ${bind(workerId)}`]);
  }

  /** Fails a sweep still queued (its queue entry could not be added). */
  failQueued(sweepId: string, error: string): Promise<SweepRow | undefined> {
    return this.apply(sweepId, { status: 'failed', error, finished_at: new Date() }, () => ["status = 'queued'"]);
  }

  /** The caller cancels: a queued sweep is cancelled at once; a running one is flagged, and its holder cancels its
   *  running trials and ends it. Undefined when it was neither. */
  async cancel(userId: string, sweepId: string): Promise<SweepRow | undefined> {
    const queued = await this.apply(sweepId, { status: 'cancelled', finished_at: new Date() }, (bind) => [`user_id = ${bind(userId)}`, "status = 'queued'"]);
    if (queued) return queued;
    const [flagged] = await this.db.query<SweepRow>(
      "UPDATE sweeps SET cancel_requested = true, updated_at = now() WHERE user_id = $1 AND sweep_id = $2 AND status = 'running' RETURNING *",
      [userId, sweepId],
    );
    return flagged;
  }

  /** Running sweeps whose worker's hold is lost (work-rows.ts). */
  listOrphaned(lost: LostHold): Promise<SweepRow[]> {
    return listLostHolds<SweepRow>(this.db, SWEEP_WORK, lost);
  }

  /** Hands an orphaned sweep back to the queue, only while it is still on that worker and its hold is still lost. */
  releaseOrphan(row: SweepRow, lost: LostHold): Promise<SweepRow | undefined> {
    return this.apply(row.sweep_id, { status: 'queued', worker_id: null }, (bind) => [
      SWEEP_WORK.held,
      row.worker_id === null ? 'worker_id IS NULL' : `worker_id = ${bind(row.worker_id)}`,
      holdLost(SWEEP_WORK, lost, bind),
    ]);
  }

  /** Ended sweeps whose study may still exist, ended at least `graceS` seconds ago (a holder deletes its own at once). */
  listStudiesLeft(graceS: number): Promise<SweepRow[]> {
    return this.db.query<SweepRow>(
      "SELECT * FROM sweeps WHERE status NOT IN ('queued', 'running') AND NOT study_deleted AND finished_at < now() - make_interval(secs => $1) ORDER BY finished_at LIMIT 10",
      [graceS],
    );
  }

  /** The ended sweep's study is gone. */
  async studyDeleted(sweepId: string): Promise<void> {
    await this.db.query('UPDATE sweeps SET study_deleted = true WHERE sweep_id = $1', [sweepId]);
  }

  /** Deletes the caller's sweep unless it is queued or running (its trials go with it); false when there was none. */
  async delete(userId: string, sweepId: string): Promise<boolean> {
    const rows = await this.db.query("DELETE FROM sweeps WHERE user_id = $1 AND sweep_id = $2 AND status NOT IN ('queued', 'running') RETURNING sweep_id", [userId, sweepId]);
    return rows.length > 0;
  }

  async trials(sweepId: string): Promise<SweepTrialRow[]> {
    return this.db.query<SweepTrialRow>('SELECT * FROM sweep_trials WHERE sweep_id = $1 ORDER BY trial', [sweepId]);
  }

  /** The trials of several sweeps at once, by sweep. */
  async trialsOf(sweepIds: readonly string[]): Promise<Map<string, SweepTrialRow[]>> {
    const out = new Map<string, SweepTrialRow[]>(sweepIds.map((id) => [id, []]));
    if (sweepIds.length === 0) return out;
    const rows = await this.db.query<SweepTrialRow>('SELECT * FROM sweep_trials WHERE sweep_id = ANY($1) ORDER BY sweep_id, trial', [[...sweepIds]]);
    for (const row of rows) out.get(row.sweep_id)!.push(row);
    return out;
  }

  /** A trial the study proposed, recorded before its job is submitted (job_id chosen beforehand). */
  async insertTrial(row: Pick<SweepTrialRow, 'sweep_id' | 'trial' | 'job_id' | 'params'>): Promise<void> {
    await this.db.query(
      'INSERT INTO sweep_trials (sweep_id, trial, job_id, params) VALUES ($1, $2, $3, $4::json) ON CONFLICT (sweep_id, trial) DO NOTHING',
      [row.sweep_id, row.trial, row.job_id, JSON.stringify(row.params)],
    );
  }

  /** Updates a trial; a finished one (completed, pruned, failed) is left as it is. */
  async updateTrial(sweepId: string, trial: number, update: TrialUpdate): Promise<boolean> {
    const row = await guardedUpdate(this.db, {
      table: 'sweep_trials', idColumn: 'sweep_id', id: sweepId, set: update, jsonColumns: new Set(['steps']),
      where: (bind) => [`trial = ${bind(trial)}`, "state = 'running'"],
    });
    return row !== undefined;
  }

  private apply(sweepId: string, update: SweepUpdate, where: (bind: Bind) => string[]): Promise<SweepRow | undefined> {
    return guardedUpdate<SweepRow>(this.db, { table: 'sweeps', idColumn: 'sweep_id', id: sweepId, set: update, jsonColumns: new Set(['request']), where });
  }
}
