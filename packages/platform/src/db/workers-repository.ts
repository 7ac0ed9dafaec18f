// The worker registry: each worker's row (host, devices, queues served, work in hand) and its heartbeat.
// "Live" is always judged by the database's clock (heartbeat_at > now() - timeout), so machines whose clocks
// disagree still agree on who is alive.
import type { Database } from './database.ts';

export interface DeviceInfo {
  kind: 'cuda' | 'cpu';
  name: string;
  memory_bytes: number;
}

/** The models of completed jobs a worker converts for chat in the background, one at a time. */
export interface WorkerPreparing {
  /** The job whose model is being converted now. */
  job_id: string | null;
  /** Completed jobs waiting their turn, next first. */
  waiting: string[];
}

export interface WorkerRow {
  worker_id: string;
  host: string;
  pid: number;
  devices: DeviceInfo[];
  queues: string[];
  /** Ids of the training jobs, exports and requests it is working on, oldest first. */
  current_jobs: string[];
  /** Null from a worker that prepares nothing (it serves no chat) or has not beaten since it started. */
  preparing: WorkerPreparing | null;
  started_at: Date;
  heartbeat_at: Date;
}

/** Training speed measured on a host and device for one model, method and trainer. */
export interface ThroughputRow {
  host: string;
  device: string;
  base_model_id: string;
  method: string;
  trainer_type: string;
  tokens_per_second: number;
  /** probe: a timed dry run of a few steps; job: a real job's mean. */
  measured_by: 'probe' | 'job';
  /** What the last real job spent around its steps (loading, preparing, evaluating, saving); null before one ran. */
  overhead_seconds: number | null;
  /** After completed, on a worker serving chat: what preparing the last job's model for the fast engine took (its
   *  adapter's GGUF conversion, or a whole model's GGUF); null before one was prepared there. */
  chat_ready_seconds: number | null;
  measured_at: Date;
}

export type ThroughputKey = Pick<ThroughputRow, 'base_model_id' | 'method' | 'trainer_type'>;

const FRESH = 'heartbeat_at > now() - make_interval(secs => $1)';

export class WorkersRepository {
  constructor(private readonly db: Database) {}

  /** Registers a worker with the work it has in hand (none at start; a worker registering again after it was taken
   *  for dead names its work at once, so the reconciler never sees it fresh and empty-handed). */
  async register(row: Pick<WorkerRow, 'worker_id' | 'host' | 'pid' | 'devices' | 'queues'>, currentJobs: readonly string[] = []): Promise<void> {
    await this.db.query(
      `INSERT INTO workers (worker_id, host, pid, devices, queues, current_jobs) VALUES ($1, $2, $3, $4::json, $5::json, $6::json)
       ON CONFLICT (worker_id) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, devices = EXCLUDED.devices,
         queues = EXCLUDED.queues, current_jobs = EXCLUDED.current_jobs, heartbeat_at = now()`,
      [row.worker_id, row.host, row.pid, JSON.stringify(row.devices), JSON.stringify(row.queues), JSON.stringify(currentJobs)],
    );
  }

  /** Beats the heartbeat; false when the row is gone (another process took this worker for dead). */
  async heartbeat(workerId: string, currentJobs: readonly string[], preparing: WorkerPreparing | null = null): Promise<boolean> {
    const rows = await this.db.query(
      'UPDATE workers SET heartbeat_at = now(), current_jobs = $2::json, preparing = $3::json WHERE worker_id = $1 RETURNING worker_id',
      [workerId, JSON.stringify(currentJobs), preparing === null ? null : JSON.stringify(preparing)],
    );
    return rows.length > 0;
  }

  /** Workers seen within `timeoutS`, oldest first. */
  async live(timeoutS: number): Promise<WorkerRow[]> {
    return this.db.query<WorkerRow>(`SELECT * FROM workers WHERE ${FRESH} ORDER BY started_at, worker_id`, [timeoutS]);
  }

  async anyLiveWithCuda(timeoutS: number): Promise<boolean> {
    return (await this.live(timeoutS)).some((w) => w.devices.some((d) => d.kind === 'cuda'));
  }

  async anyLiveServing(queue: string, timeoutS: number): Promise<boolean> {
    return (await this.live(timeoutS)).some((w) => w.queues.includes(queue));
  }

  /** Records a measurement; a job's figure replaces a probe's, a probe never replaces a job's. A probe has no
   *  overhead to tell (it leaves the row's as it is). */
  async recordThroughput(row: Omit<ThroughputRow, 'measured_at' | 'overhead_seconds' | 'chat_ready_seconds'> & { overhead_seconds?: number | null }): Promise<void> {
    await this.db.query(
      `INSERT INTO throughput (host, device, base_model_id, method, trainer_type, tokens_per_second, measured_by, overhead_seconds)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (host, device, base_model_id, method, trainer_type) DO UPDATE
         SET tokens_per_second = EXCLUDED.tokens_per_second, measured_by = EXCLUDED.measured_by, measured_at = now(),
             overhead_seconds = COALESCE(EXCLUDED.overhead_seconds, throughput.overhead_seconds)
         WHERE EXCLUDED.measured_by = 'job' OR throughput.measured_by = 'probe'`,
      [row.host, row.device, row.base_model_id, row.method, row.trainer_type, row.tokens_per_second, row.measured_by, row.overhead_seconds ?? null],
    );
  }

  /** Records what preparing a completed job's model for the fast engine took on this host (the job's row, written when
   *  it completed; nothing when there is none). */
  async recordChatReady(row: Pick<ThroughputRow, 'host' | 'device' | 'chat_ready_seconds'> & ThroughputKey): Promise<void> {
    await this.db.query(
      'UPDATE throughput SET chat_ready_seconds = $6 WHERE host = $1 AND device = $2 AND base_model_id = $3 AND method = $4 AND trainer_type = $5',
      [row.host, row.device, row.base_model_id, row.method, row.trainer_type, row.chat_ready_seconds],
    );
  }

  /** Every host's measurements for `key`. */
  async throughput(key: ThroughputKey): Promise<ThroughputRow[]> {
    return this.db.query<ThroughputRow>(
      'SELECT * FROM throughput WHERE base_model_id = $1 AND method = $2 AND trainer_type = $3 ORDER BY host, device',
      [key.base_model_id, key.method, key.trainer_type],
    );
  }

  async remove(workerId: string): Promise<void> {
    await this.db.query('DELETE FROM workers WHERE worker_id = $1', [workerId]);
  }

  /** Forgets workers silent for `timeoutS`; their work was recovered first (jobs recovery). */
  async removeSilent(timeoutS: number): Promise<string[]> {
    const rows = await this.db.query<{ worker_id: string }>(
      'DELETE FROM workers WHERE NOT (heartbeat_at > now() - make_interval(secs => $1)) RETURNING worker_id',
      [timeoutS],
    );
    return rows.map((r) => r.worker_id);
  }

  /** Forgets every worker: only where no other process can be running one (the embedded store at start). */
  async removeAll(): Promise<void> {
    await this.db.query('DELETE FROM workers');
  }
}
