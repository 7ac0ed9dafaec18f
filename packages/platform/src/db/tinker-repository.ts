// Rows of the Tinker-compatible API (migration 024): client sessions, training runs (one LoRA model a worker holds on
// its `session` lane), samplers, the calls the SDK submits and the checkpoints runs saved. Reads for a caller filter
// on user_id, so another user's run, sampler or future reads exactly like an unknown one; the worker-side methods act
// on the run the queue named. A run is taken like a training job (claim, guarded by the worker that holds it), and the
// watchdog and the reconciler release it when its worker is gone (TINKER_WORK).
import { EventEmitter } from 'node:events';
import type { Database, Queryable } from './database.ts';
import { guardedUpdate } from './guarded-update.ts';
import { listLostHolds, type LostHold, type WorkTable } from './work-rows.ts';
import { newId } from '../ids.ts';

export const TINKER_WORK: WorkTable = { table: 'tinker_runs', idColumn: 'run_id', waiting: "status = 'queued'", held: "status = 'running'" };

export interface TinkerSessionRow {
  session_id: string;
  user_id: string;
  request: Record<string, unknown>;
  created_at: Date;
  heartbeat_at: Date;
  finished_at: Date | null;
}

/** queued: waiting for a worker; running: held in a worker's memory; idle: let go after TINKER_IDLE_S with its state
 *  saved (the next call queues it again, to continue from there); failed: its worker died or it could not start. */
export type TinkerRunStatus = 'queued' | 'running' | 'idle' | 'failed';

export interface TinkerRunConfig {
  rank: number;
  train_mlp: boolean;
  train_attn: boolean;
  train_unembed: boolean;
  seed: number | null;
  /** The saved state it starts from (load_weights, or its own state saved when it went idle), and with or without
   *  the optimizer's. */
  from_state?: { run_id: string; name: string; optimizer: boolean };
}

export interface TinkerRunRow {
  run_id: string;
  /** The SDK's `<session_id>:train:<n>`. */
  model_id: string;
  session_id: string;
  user_id: string;
  base_model: string;
  config: TinkerRunConfig;
  status: TinkerRunStatus;
  worker_id: string | null;
  error: string | null;
  /** optim_steps taken. */
  step: number;
  last_loss: number | null;
  /** The seq_id of the next training call to run (the SDK numbers them from 1, without gaps). */
  next_seq_id: number;
  blob_prefix: string;
  created_at: Date;
  updated_at: Date;
}

export interface TinkerSamplerRow {
  sampler_id: string;
  session_id: string;
  user_id: string;
  /** The run whose worker samples (null: the base model alone). */
  run_id: string | null;
  base_model: string;
  model_path: string | null;
  created_at: Date;
}

export type TinkerCallStatus = 'queued' | 'running' | 'done' | 'failed';

/** A failed call as the SDK reads it (RequestFailedError): category user (fix the request), server or unknown. */
export interface TinkerCallError {
  error: string;
  category: 'user' | 'server' | 'unknown';
}

export interface TinkerCallRow {
  request_id: string;
  user_id: string;
  run_id: string | null;
  target_id: string;
  seq_id: number | null;
  op: string;
  request: Record<string, unknown>;
  status: TinkerCallStatus;
  result: Record<string, unknown> | null;
  error: TinkerCallError | null;
  created_at: Date;
  finished_at: Date | null;
}

export interface TinkerCheckpointRow {
  run_id: string;
  kind: 'weights' | 'sampler_weights';
  name: string;
  user_id: string;
  step: number;
  size_bytes: number;
  created_at: Date;
}

/** Calls a run's worker may run whatever their seq_id: sampling has its own numbering, per sampler. */
export const UNORDERED_OPS = ['sample'] as const;

type NewCall = Pick<TinkerCallRow, 'user_id' | 'run_id' | 'target_id' | 'seq_id' | 'op' | 'request'> & Partial<Pick<TinkerCallRow, 'status' | 'result' | 'error'>>;
type RunUpdate = Partial<Pick<TinkerRunRow, 'status' | 'worker_id' | 'error' | 'step' | 'last_loss' | 'next_seq_id' | 'config'>>;

const int = (row: TinkerCallRow): TinkerCallRow => ({ ...row, seq_id: row.seq_id === null ? null : Number(row.seq_id) });

/** The calls this process ended, counted and told to its waiters (retrieve_future's long poll): one for every
 *  repository here, since the service and the worker of an embedded stack may read through different ones. */
const callEnds = new EventEmitter().setMaxListeners(0);
let callsEnded = 0;
function toldEnded(): void {
  callsEnded += 1;
  callEnds.emit('ended');
}

export class TinkerRepository {
  /** `endsSeenHere`: every call's end is written by this process (the embedded database, which one process holds), so
   *  a waiter told by untilCallEnded needs no quick polling of the rows; with PostgreSQL a worker elsewhere ends them. */
  constructor(private readonly db: Database, readonly endsSeenHere = false) {}

  /** How many calls this process has ended so far: read before a call's row, and given to untilCallEnded after it. */
  callsEndedSoFar(): number {
    return callsEnded;
  }

  /** Resolves once a call has ended here since `seen` (at once if one has), or after `ms`. */
  untilCallEnded(seen: number, ms: number): Promise<void> {
    if (callsEnded > seen) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        callEnds.off('ended', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      callEnds.on('ended', done);
    });
  }

  async createSession(userId: string, request: Record<string, unknown>): Promise<TinkerSessionRow> {
    const [row] = await this.db.query<TinkerSessionRow>('INSERT INTO tinker_sessions (session_id, user_id, request) VALUES ($1, $2, $3::json) RETURNING *', [newId('tks'), userId, JSON.stringify(request)]);
    return row!;
  }

  async getSession(userId: string, sessionId: string): Promise<TinkerSessionRow | undefined> {
    const [row] = await this.db.query<TinkerSessionRow>('SELECT * FROM tinker_sessions WHERE user_id = $1 AND session_id = $2', [userId, sessionId]);
    return row;
  }

  /** The SDK's heartbeat; the session as it is now (undefined: not the caller's). */
  async beat(userId: string, sessionId: string): Promise<TinkerSessionRow | undefined> {
    const [row] = await this.db.query<TinkerSessionRow>(
      'UPDATE tinker_sessions SET heartbeat_at = now() WHERE user_id = $1 AND session_id = $2 AND finished_at IS NULL RETURNING *', [userId, sessionId]);
    return row ?? this.getSession(userId, sessionId);
  }

  async finishSession(userId: string, sessionId: string): Promise<boolean> {
    const rows = await this.db.query('UPDATE tinker_sessions SET finished_at = coalesce(finished_at, now()) WHERE user_id = $1 AND session_id = $2 RETURNING session_id', [userId, sessionId]);
    return rows.length > 0;
  }

  /** The session's heartbeat and end, for the worker holding one of its runs. */
  async sessionForWorker(sessionId: string): Promise<TinkerSessionRow | undefined> {
    const [row] = await this.db.query<TinkerSessionRow>('SELECT * FROM tinker_sessions WHERE session_id = $1', [sessionId]);
    return row;
  }

  /** A new run, queued, with the call whose future says when its model is loaded (op create_model or load_weights). */
  async createRun(run: Pick<TinkerRunRow, 'run_id' | 'model_id' | 'session_id' | 'user_id' | 'base_model' | 'config' | 'blob_prefix'>, call: { op: string; request: Record<string, unknown> }): Promise<{ run: TinkerRunRow; call: TinkerCallRow }> {
    return this.db.transaction(async (tx) => {
      const [created] = await tx.query<TinkerRunRow>(
        `INSERT INTO tinker_runs (run_id, model_id, session_id, user_id, base_model, config, blob_prefix) VALUES ($1, $2, $3, $4, $5, $6::json, $7) RETURNING *`,
        [run.run_id, run.model_id, run.session_id, run.user_id, run.base_model, JSON.stringify(run.config), run.blob_prefix],
      );
      const made = await this.insertCall(tx, { user_id: run.user_id, run_id: run.run_id, target_id: run.model_id, seq_id: 0, op: call.op, request: call.request });
      return { run: created!, call: made };
    });
  }

  async getRun(userId: string, runId: string): Promise<TinkerRunRow | undefined> {
    const [row] = await this.db.query<TinkerRunRow>('SELECT * FROM tinker_runs WHERE user_id = $1 AND run_id = $2', [userId, runId]);
    return row;
  }

  async getRunByModel(userId: string, modelId: string): Promise<TinkerRunRow | undefined> {
    const [row] = await this.db.query<TinkerRunRow>('SELECT * FROM tinker_runs WHERE user_id = $1 AND model_id = $2', [userId, modelId]);
    return row;
  }

  async getRunForWorker(runId: string): Promise<TinkerRunRow | undefined> {
    const [row] = await this.db.query<TinkerRunRow>('SELECT * FROM tinker_runs WHERE run_id = $1', [runId]);
    return row;
  }

  /** The caller's runs, newest first, and how many there are. */
  async listRuns(userId: string, page: { limit: number; offset: number }): Promise<{ rows: TinkerRunRow[]; total: number }> {
    const rows = await this.db.query<TinkerRunRow>('SELECT * FROM tinker_runs WHERE user_id = $1 ORDER BY created_at DESC, run_id DESC LIMIT $2 OFFSET $3', [userId, page.limit, page.offset]);
    const [count] = await this.db.query<{ n: string }>('SELECT count(*) AS n FROM tinker_runs WHERE user_id = $1', [userId]);
    return { rows, total: Number(count?.n ?? 0) };
  }

  /** Every run of the caller, newest first (GET /jobs shows them beside the training jobs). */
  listAllRuns(userId: string): Promise<TinkerRunRow[]> {
    return this.db.query<TinkerRunRow>('SELECT * FROM tinker_runs WHERE user_id = $1 ORDER BY created_at DESC, run_id DESC', [userId]);
  }

  /** Removes a run and everything recorded of it, its export records too (its files are the caller's to delete). */
  async deleteRun(userId: string, runId: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      for (const table of ['tinker_calls', 'tinker_checkpoints', 'tinker_samplers']) await tx.query(`DELETE FROM ${table} WHERE user_id = $1 AND run_id = $2`, [userId, runId]);
      const rows = await tx.query('DELETE FROM tinker_runs WHERE user_id = $1 AND run_id = $2 RETURNING run_id', [userId, runId]);
      if (rows.length > 0) await tx.query('DELETE FROM exports WHERE job_id = $1', [runId]);
    });
  }

  /** Updates a run; with `onlyIf`, only while it has one of those statuses; with `onlyWorker`, only while that worker holds it. */
  updateRun(runId: string, set: RunUpdate, onlyIf?: readonly TinkerRunStatus[], onlyWorker?: string): Promise<TinkerRunRow | undefined> {
    return guardedUpdate<TinkerRunRow>(this.db, {
      table: 'tinker_runs', idColumn: 'run_id', id: runId, set, jsonColumns: new Set(['config']),
      where: (bind) => [...(onlyIf ? [`status = ANY(${bind([...onlyIf])})`] : []), ...(onlyWorker ? [`worker_id = ${bind(onlyWorker)}`] : [])],
    });
  }

  /** Runs whose worker's hold is lost (the watchdog and the reconciler release them). */
  listLostRuns(lost: LostHold): Promise<TinkerRunRow[]> {
    return listLostHolds<TinkerRunRow>(this.db, TINKER_WORK, lost);
  }

  async createSampler(row: Pick<TinkerSamplerRow, 'sampler_id' | 'session_id' | 'user_id' | 'run_id' | 'base_model' | 'model_path'>): Promise<TinkerSamplerRow> {
    const [created] = await this.db.query<TinkerSamplerRow>(
      `INSERT INTO tinker_samplers (sampler_id, session_id, user_id, run_id, base_model, model_path) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (sampler_id) DO UPDATE SET sampler_id = EXCLUDED.sampler_id RETURNING *`,
      [row.sampler_id, row.session_id, row.user_id, row.run_id, row.base_model, row.model_path],
    );
    return created!;
  }

  async getSampler(userId: string, samplerId: string): Promise<TinkerSamplerRow | undefined> {
    const [row] = await this.db.query<TinkerSamplerRow>('SELECT * FROM tinker_samplers WHERE user_id = $1 AND sampler_id = $2', [userId, samplerId]);
    return row;
  }

  /** Records a call. The SDK resends a call with the same seq_id when its own retries fire: the call already
   *  recorded for (target, seq_id) is answered again, so nothing runs twice. A new training call whose seq_id the run
   *  has gone past (skipSeqGap) is recorded failed with `late`: nothing would ever run it. */
  submit(call: NewCall, late?: TinkerCallError): Promise<TinkerCallRow> {
    return this.db.transaction(async (tx) => {
      if (late && call.status !== 'failed' && call.run_id !== null && call.seq_id !== null && !(UNORDERED_OPS as readonly string[]).includes(call.op)) {
        // KEY SHARE: a skip (FOR UPDATE) either waits for this call to be recorded and sees it, or has committed and
        // this reads the run's next_seq_id it set.
        const [run] = await tx.query<{ next_seq_id: number }>('SELECT next_seq_id FROM tinker_runs WHERE run_id = $1 FOR KEY SHARE', [call.run_id]);
        if (run && call.seq_id < run.next_seq_id) return this.insertCall(tx, { ...call, status: 'failed', error: late });
      }
      return this.insertCall(tx, call);
    });
  }

  private async insertCall(tx: Queryable, call: NewCall): Promise<TinkerCallRow> {
    const status = call.status ?? 'queued';
    const [made] = await tx.query<TinkerCallRow>(
      `INSERT INTO tinker_calls (request_id, user_id, run_id, target_id, seq_id, op, request, status, result, error, finished_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7::json, $8, $9::json, $10::json, $11)
       ON CONFLICT (target_id, seq_id) DO NOTHING RETURNING *`,
      [newId('req'), call.user_id, call.run_id, call.target_id, call.seq_id, call.op, JSON.stringify(call.request), status,
        call.result ? JSON.stringify(call.result) : null, call.error ? JSON.stringify(call.error) : null, status === 'queued' ? null : new Date()],
    );
    if (made) return int(made);
    const [existing] = await tx.query<TinkerCallRow>('SELECT * FROM tinker_calls WHERE target_id = $1 AND seq_id = $2', [call.target_id, call.seq_id]);
    return int(existing!);
  }

  async getCall(userId: string, requestId: string): Promise<TinkerCallRow | undefined> {
    const [row] = await this.db.query<TinkerCallRow>('SELECT * FROM tinker_calls WHERE user_id = $1 AND request_id = $2', [userId, requestId]);
    return row && int(row);
  }

  /** Takes the next call of a run that may run now: the oldest queued one that is the run's next training call
   *  (seq_id = next_seq_id) or a sample. */
  async takeNext(run: Pick<TinkerRunRow, 'run_id' | 'next_seq_id'>): Promise<TinkerCallRow | undefined> {
    const [row] = await this.db.query<TinkerCallRow>(
      `UPDATE tinker_calls SET status = 'running' WHERE request_id = (
         SELECT request_id FROM tinker_calls WHERE run_id = $1 AND status = 'queued' AND (op = ANY($3) OR seq_id = $2)
         ORDER BY created_at, request_id LIMIT 1)
       RETURNING *`,
      [run.run_id, run.next_seq_id, [...UNORDERED_OPS]],
    );
    return row && int(row);
  }

  /** Takes the run's training call `seqId` if it is queued (a new run's create_model or load_weights call is seq 0). */
  async takeOrdered(runId: string, seqId: number): Promise<TinkerCallRow | undefined> {
    const [row] = await this.db.query<TinkerCallRow>(
      "UPDATE tinker_calls SET status = 'running' WHERE run_id = $1 AND seq_id = $2 AND status = 'queued' AND NOT (op = ANY($3)) RETURNING *",
      [runId, seqId, [...UNORDERED_OPS]],
    );
    return row && int(row);
  }

  /** Whether any call of the run waits to run. */
  async hasQueuedCalls(runId: string): Promise<boolean> {
    return (await this.db.query("SELECT 1 FROM tinker_calls WHERE run_id = $1 AND status = 'queued' LIMIT 1", [runId])).length > 0;
  }

  /** The run's training calls queued past `nextSeqId` while it is missing: the lowest one's seq_id and how long the
   *  oldest has waited (by the database's clock); undefined when none is queued. */
  async seqGap(runId: string, nextSeqId: number): Promise<{ lowest: number; waitedMs: number } | undefined> {
    const [row] = await this.db.query<{ lowest: string | number | null; waited_ms: number | null }>(
      `SELECT min(seq_id) AS lowest, (extract(epoch FROM now() - min(created_at)) * 1000)::float8 AS waited_ms
       FROM tinker_calls WHERE run_id = $1 AND status = 'queued' AND seq_id > $2 AND NOT (op = ANY($3))`,
      [runId, nextSeqId, [...UNORDERED_OPS]],
    );
    return row && row.lowest !== null ? { lowest: Number(row.lowest), waitedMs: Number(row.waited_ms) } : undefined;
  }

  /** Moves the run's next_seq_id from `from` on to `to` (a queued later call), past seq_ids that never arrived: only
   *  while `workerId` holds the run at `from` and no training call in [from, to) has been recorded meanwhile. The run's
   *  row is locked FOR UPDATE first, so a call being recorded (submit, FOR KEY SHARE) is either seen here or recorded
   *  late; two workers or a restart cannot skip twice. 'arrived': a call in the gap was recorded meanwhile; 'not held':
   *  the run is not this worker's at `from` (any more). */
  async skipSeqGap(runId: string, workerId: string, from: number, to: number): Promise<'skipped' | 'arrived' | 'not held'> {
    return this.db.transaction(async (tx) => {
      const [run] = await tx.query(
        "SELECT run_id FROM tinker_runs WHERE run_id = $1 AND status = 'running' AND worker_id = $2 AND next_seq_id = $3 FOR UPDATE", [runId, workerId, from]);
      if (!run) return 'not held';
      const [arrived] = await tx.query(
        'SELECT 1 FROM tinker_calls WHERE run_id = $1 AND seq_id >= $2 AND seq_id < $3 AND NOT (op = ANY($4)) LIMIT 1', [runId, from, to, [...UNORDERED_OPS]]);
      if (arrived) return 'arrived';
      await tx.query('UPDATE tinker_runs SET next_seq_id = $2, updated_at = now() WHERE run_id = $1', [runId, to]);
      return 'skipped';
    });
  }

  async finishCall(requestId: string, outcome: { result: Record<string, unknown> } | { error: TinkerCallError }): Promise<void> {
    const ok = 'result' in outcome;
    await this.db.query(
      `UPDATE tinker_calls SET status = $2, result = $3::json, error = $4::json, finished_at = now() WHERE request_id = $1 AND status IN ('queued', 'running')`,
      [requestId, ok ? 'done' : 'failed', ok ? JSON.stringify(outcome.result) : null, ok ? null : JSON.stringify(outcome.error)],
    );
    toldEnded();
  }

  /** Fails every call of the run not finished (its worker is gone, or it could not start). */
  async failUnfinished(runId: string, error: TinkerCallError): Promise<number> {
    const rows = await this.db.query(
      `UPDATE tinker_calls SET status = 'failed', error = $2::json, finished_at = now() WHERE run_id = $1 AND status IN ('queued', 'running') RETURNING request_id`,
      [runId, JSON.stringify(error)],
    );
    if (rows.length > 0) toldEnded();
    return rows.length;
  }

  async recordCheckpoint(row: Omit<TinkerCheckpointRow, 'created_at'>): Promise<TinkerCheckpointRow> {
    const [saved] = await this.db.query<TinkerCheckpointRow>(
      `INSERT INTO tinker_checkpoints (run_id, kind, name, user_id, step, size_bytes) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (run_id, kind, name) DO UPDATE SET step = EXCLUDED.step, size_bytes = EXCLUDED.size_bytes, created_at = now() RETURNING *`,
      [row.run_id, row.kind, row.name, row.user_id, row.step, row.size_bytes],
    );
    return { ...saved!, size_bytes: Number(saved!.size_bytes) };
  }

  async getCheckpoint(userId: string, runId: string, kind: string, name: string): Promise<TinkerCheckpointRow | undefined> {
    const [row] = await this.db.query<TinkerCheckpointRow>('SELECT * FROM tinker_checkpoints WHERE user_id = $1 AND run_id = $2 AND kind = $3 AND name = $4', [userId, runId, kind, name]);
    return row && { ...row, size_bytes: Number(row.size_bytes) };
  }

  /** The checkpoints of several of the caller's runs in one query, newest first (a list of runs shows each one's last). */
  async checkpointsOfRuns(userId: string, runIds: readonly string[]): Promise<TinkerCheckpointRow[]> {
    if (runIds.length === 0) return [];
    const rows = await this.db.query<TinkerCheckpointRow>(
      'SELECT * FROM tinker_checkpoints WHERE user_id = $1 AND run_id = ANY($2) ORDER BY created_at DESC, name', [userId, [...runIds]]);
    return rows.map((r) => ({ ...r, size_bytes: Number(r.size_bytes) }));
  }

  async listCheckpoints(userId: string, runId?: string): Promise<TinkerCheckpointRow[]> {
    const rows = await this.db.query<TinkerCheckpointRow>(
      `SELECT * FROM tinker_checkpoints WHERE user_id = $1 ${runId ? 'AND run_id = $2' : ''} ORDER BY created_at DESC, name`, runId ? [userId, runId] : [userId]);
    return rows.map((r) => ({ ...r, size_bytes: Number(r.size_bytes) }));
  }
}
