// The workers that run jobs and the queue lanes they serve (GET /workers).
import { z } from 'zod';
import { Identifier, Timestamp, maybe } from '../common.ts';

// ---------------------------------------------------------------------------------------------
// Workers (decisions.md "Scaled out, workers and secrets")

export const WorkerDevice = z
  .object({
    kind: z.enum(['cuda', 'cpu']),
    name: z.string(),
    memory_bytes: z.number().int().nonnegative().describe('GPU memory for cuda, RAM for cpu'),
  })
  .meta({ id: 'WorkerDevice' });

export const WorkerInfo = z
  .object({
    worker_id: Identifier,
    host: z.string(),
    pid: z.number().int().describe('Its process id on that host'),
    devices: z.array(WorkerDevice),
    queues: z.array(z.string()).describe('The queues it serves: train, export, infer, evaluate'),
    current_job_id: maybe(z.string()).describe('The work it took first of what it holds now (a job, export or request id)'),
    current_jobs: z.array(z.string()).describe('Everything it is working on now'),
    preparing: z
      .object({
        job_id: maybe(z.string()).describe('The completed job whose model it is converting for chat now (GGUF for the fast engine)'),
        waiting: z.array(z.string()).describe('Completed jobs waiting their turn, next first (the order they completed in)'),
      })
      .describe('Models of completed jobs it prepares for chat after training, one at a time; a deleted job is skipped')
      .meta({ id: 'WorkerPreparing' }),
    started_at: Timestamp,
    last_seen_at: Timestamp.describe('Its last heartbeat; a worker silent for WORKER_TIMEOUT_S is gone'),
  })
  .meta({ id: 'WorkerInfo', description: 'A live worker' });
export type WorkerInfo = z.infer<typeof WorkerInfo>;

export const QueueLane = z
  .object({
    name: z.string().describe('train, export, infer, evaluate, preflight or augment'),
    waiting: z.number().int().nonnegative().describe('Entries no worker has taken yet'),
    active: z.number().int().nonnegative().describe('Entries a worker is working on'),
    oldest_waiting_seconds: z.number().nonnegative().describe('How long the oldest waiting entry has waited (0: none waits)'),
    workers: z.number().int().nonnegative().describe('Live workers that serve this lane'),
  })
  .meta({ id: 'QueueLane', description: 'A queue lane now: the numbers its metrics carry (bullmq_job_count, ftp_queue_oldest_waiting_seconds, ftp_workers_alive)' });
export type QueueLane = z.infer<typeof QueueLane>;

export const WorkerList = z
  .object({
    workers: z.array(WorkerInfo).describe('Live workers, oldest first'),
    queues: z.array(QueueLane).describe('Every queue lane: what waits, what runs, and who serves it'),
  })
  .meta({ id: 'WorkerList' });
export type WorkerList = z.infer<typeof WorkerList>;
