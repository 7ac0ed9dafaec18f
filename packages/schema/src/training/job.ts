// The training job as the service reports it: the answer to POST /train, the job status resource and its list, the
// server-sent events of GET /jobs/{id}/events, and the job's checkpoints.
import { z } from 'zod';
import { ArtifactGroups, ExportRecord } from '../artifacts.ts';
import { eventLogStreamItem, Identifier, Modality, Timestamp, maybe } from '../common.ts';
import { PreflightReport } from './preflight.ts';

// ---------------------------------------------------------------------------------------------
// Responses

export const TrainResponse = z.object({ job_id: Identifier }).meta({ id: 'TrainResponse' });
export type TrainResponse = z.infer<typeof TrainResponse>;

export const JobStatus = z
  .enum(['queued', 'preparing', 'training', 'paused', 'completed', 'failed'])
  .describe('queued → preparing → training → completed | failed; cancel and worker loss also end in failed; paused (POST /jobs/{id}/pause) until resumed, then queued again');
export type JobStatus = z.infer<typeof JobStatus>;

export const JobProgress = z
  .object({
    step: z.number().int().nonnegative(),
    total_steps: maybe(z.number().int().nonnegative()),
    epoch: maybe(z.number().nonnegative()),
    loss: maybe(z.number()),
    eta_seconds: maybe(z.number().nonnegative()),
    reward: maybe(z.number()).describe('grpo: the mean reward of the last logged step (its loss stays near 0 by construction: the reward is the figure to watch)'),
  })
  .meta({ id: 'JobProgress' });
export type JobProgress = z.infer<typeof JobProgress>;

export const JobMetrics = z
  .object({
    eval_loss: maybe(z.number()),
    perplexity: maybe(z.number()).describe('exp(eval_loss)'),
    accuracy: maybe(z.number()).describe('Next-token accuracy on assistant tokens'),
    eval_runtime: maybe(z.number()).describe('Seconds'),
    reward: maybe(z.number()).describe('grpo: the mean reward of its last logged training step (a prompt-only split has no answers to measure a loss on)'),
  })
  .describe('Evaluation after training, on the test split (or the last 5% of train)');

export const TrainingJob = z
  .object({
    job_id: Identifier,
    job_name: z.string(),
    status: JobStatus,
    modality: Modality,
    tracker_url: maybe(z.string()).describe('Tracker run, or this job’s dashboard page'),
    processed_dataset_id: maybe(Identifier).describe('Null for a /v1 fine-tuning job whose training file failed validation (no dataset was made)'),
    adapter_path: maybe(z.string()),
    base_model_id: z.string(),
    gguf_path: maybe(z.string()),
    metrics: maybe(JobMetrics),
    error: maybe(z.string()).describe('Why the job failed'),
    created_at: Timestamp,
    updated_at: Timestamp.describe('When the job itself last changed (its status, progress, results); an export of it is its own record and leaves this as it is'),
    started_at: maybe(Timestamp).describe('When a worker took the job (null while it waits)'),
    finished_at: maybe(Timestamp).describe('When it completed or failed (null while it waits or runs): a run took finished_at − started_at'),
    jobs_ahead: maybe(z.number().int().min(0)).describe('While queued: how many queued jobs (any user’s) were submitted before it and go first; null otherwise'),
    progress: maybe(JobProgress),
    artifacts: ArtifactGroups,
    latest_export: maybe(ExportRecord),
    parent: maybe(z.object({ job_id: Identifier, checkpoint_step: maybe(z.number().int().positive()) })).describe('The job (and checkpoint) this one continued from'),
    best_step: maybe(z.number().int().positive()).describe('load_best_model_at_end: the step whose weights the job kept'),
    preflight: maybe(PreflightReport).describe('The pre-flight report of this run, made by its worker before training'),
    training_config: z.record(z.string(), z.unknown()).describe('The training_config the job runs with: defaults filled in, secrets (tracker api_key) and the settings its trainer and method do not read left out, and with max_steps set, epochs is the passes over the train split those steps make'),
    sweep_id: maybe(Identifier).describe('The sweep (POST /sweeps) this job is a trial of'),
    pruned: z.boolean().describe('A sweep’s pruner stopped it early at an evaluation: it completed there, with the steps it had made (its events say why)'),
  })
  .meta({ id: 'TrainingJob', description: 'A training job and what it produced' });
export type TrainingJob = z.infer<typeof TrainingJob>;

export const JobList = z
  .object({ jobs: z.array(TrainingJob).describe('The caller’s jobs, newest first') })
  .meta({ id: 'JobList' });
export type JobList = z.infer<typeof JobList>;

export const JobDeleteResult = z
  .object({
    job_id: Identifier,
    deleted: z.boolean(),
    message: z.string(),
    deleted_resources: z.array(z.string()).describe('Row, config, checkpoints, adapter, merged model, GGUF and exports removed'),
  })
  .meta({ id: 'JobDeleteResult' });
export type JobDeleteResult = z.infer<typeof JobDeleteResult>;

export const JobParams = z.object({ job_id: Identifier.describe('From POST /train') });

// ---------------------------------------------------------------------------------------------
// GET /jobs/{id}/events: what each server-sent event carries

/** When an event of the log was recorded: every event but `end` carries it. */
const recordedAt = { created_at: Timestamp.describe('When the event was recorded') };

/** The `data` (JSON) of each kind of event in a job's stream. */
export const JobEventData = {
  status: z.object({ status: JobStatus, error: z.string().optional(), ...recordedAt }).describe('The job moved to this status'),
  progress: JobProgress.extend({
    ...recordedAt,
    learning_rate: maybe(z.number()),
    tokens_per_second: maybe(z.number()),
    extra: z.record(z.string(), z.number()).optional().describe("The trainer's other figures (token accuracy, trained tokens, …)"),
  }).describe('A logged training step'),
  metrics: z
    .object({ step: z.number().int().nonnegative(), final: z.boolean().optional(), ...recordedAt })
    .catchall(maybe(z.number()))
    .describe('An evaluation: eval_loss, perplexity, accuracy, eval_runtime and any other eval_… figure'),
  log: z
    .object({
      level: z.enum(['info', 'warning', 'error']),
      message: z.string(),
      about: z.literal('model').optional().describe("model: a note on the job's model (a conversion, a download), not on its training"),
      ...recordedAt,
    })
    .describe('Something the job should say: a warning, a retry, a re-queue or resume, a model being prepared'),
  end: z.union([TrainingJob, z.object({ job_id: Identifier, deleted: z.literal(true) })]).describe('The last event: the final job (or that it was deleted)'),
} as const;

/** One event of the stream as its SSE fields carry it (OpenAPI 3.2 calls this the stream's item schema; schemathesis
 *  checks every event against it): `event` the kind, `id` its sequence number, `data` one line of JSON
 *  whose shape the kind decides (its contentSchema). */
export const JobStreamEvent = eventLogStreamItem(JobEventData)
  .meta({ id: 'JobStreamEvent', description: 'One server-sent event of GET /jobs/{id}/events; the stream is a sequence of them, with `:` comments as heartbeats' });

// ---------------------------------------------------------------------------------------------
// Checkpoints (decisions.md "Checkpoints, pre-flight, continuation")

export const Checkpoint = z
  .object({
    step: z.number().int().nonnegative().describe('A job’s checkpoints start at 1; a Tinker run’s saved weights have its optim_steps so far (0 before the first)'),
    name: z.string().optional().describe('A Tinker run’s saved weights: their name (checkpoint_name of exports, inference and evaluations, for kind sampler_weights)'),
    kind: z.enum(['weights', 'sampler_weights']).optional().describe('A Tinker run’s saved weights: a state to load (save_state) or weights to sample and serve (save_weights_for_sampler)'),
    tinker_path: z.string().optional().describe('A Tinker run’s saved weights: their tinker:// path'),
    epoch: maybe(z.number().nonnegative()),
    train_loss: maybe(z.number()).describe('The last training loss logged up to this step'),
    eval_loss: maybe(z.number()).describe('When the job evaluated at this step'),
    created_at: Timestamp,
    size_bytes: z.number().int().nonnegative().describe('Adapter (or weights) and the state to resume from'),
  })
  .meta({ id: 'Checkpoint' });
export type Checkpoint = z.infer<typeof Checkpoint>;

export const CheckpointList = z
  .object({ checkpoints: z.array(Checkpoint).describe('Oldest first; the core keeps the newest few (and the best, with load_best_model_at_end)') })
  .meta({ id: 'CheckpointList' });
export type CheckpointList = z.infer<typeof CheckpointList>;
