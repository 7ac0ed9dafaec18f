// Route contracts of the training service (interface.md 4.2 and the extra job endpoints of decisions.md).
import { z } from 'zod';
import { CheckpointList, JobDeleteResult, JobList, JobParams, JobStreamEvent, TrainResponse, TrainingJob } from '../training/job.ts';
import { PreflightResponse } from '../training/preflight.ts';
import { TrainRequest } from '../training/request.ts';
import { WorkerList } from '../training/workers.ts';
import {
  bearerOptional,
  conflict,
  defineRoute,
  healthRoute,
  metricsRoute,
  invalidRequest,
  malformedJson,
  mediaResponse,
  notFound,
  serviceErrors,
} from './contract.ts';
import { ErrorBody } from '../common.ts';

const tags = ['jobs'] as const;
const jobNotFound = notFound('training job');

export const trainingRoutes = {
  getHealth: healthRoute('training'),
  getMetrics: metricsRoute(),

  startTraining: defineRoute({
    method: 'POST',
    url: '/train',
    schema: {
      operationId: 'startTraining',
      summary: 'Start a fine-tuning job',
      description:
        'Queues a job on a processed dataset and a base model. Checked before queueing: the dataset exists, is the caller’s and is ready, ' +
        'trainer_type fits its processing mode (sft ← language_modeling, dpo/orpo ← preference, grpo ← prompt_only), ' +
        'QLoRA has a CUDA worker, eval_strategy has a test split, and reward reference fields are dataset columns. ' +
        'Then a worker’s warm core counts the data as training will, when one answers within SUBMIT_CHECK_MS (10 s by default): ' +
        'a job whose rows all train nothing (every row cut by max_length before its answer), or whose spec the core refuses, is a 422 ' +
        'at training_config and nothing is stored; the report is kept as the job’s preflight. No answer in time, the job is queued ' +
        'and its own pre-flight refuses it with the same message before the model loads. ' +
        'With dry_run a worker also checks the spec as training would and answers the pre-flight report; no job is created.',
      tags,
      security: bearerOptional,
      body: TrainRequest,
      response: {
        200: z.union([TrainResponse, PreflightResponse]).describe('The queued job; with dry_run, the pre-flight report'),
        400: malformedJson,
        404: notFound('processed dataset'),
        409: conflict('The processed dataset is still processing (augmentation on a worker) or failed; only a ready dataset trains'),
        422: invalidRequest,
        ...serviceErrors,
        504: ErrorBody.describe('dry_run: the report did not come within PREFLIGHT_TIMEOUT_MS; detail names the limit'),
      },
    },
  }),

  listJobs: defineRoute({
    method: 'GET',
    url: '/jobs',
    schema: {
      operationId: 'listJobs',
      summary: 'List the caller’s training jobs',
      description: 'Every job of the caller, newest first, with the caller’s Tinker training runs among them (training_config.trainer_type tinker: its optim_steps are its progress, the loss of its last forward_backward its loss; paused while it is let go, idle).',
      tags,
      security: bearerOptional,
      response: {
        200: JobList.describe('The caller’s jobs'),
        ...serviceErrors,
      },
    },
  }),

  getJob: defineRoute({
    method: 'GET',
    url: '/jobs/:job_id',
    schema: {
      operationId: 'getJob',
      summary: 'Get a training job',
      description: 'Status, progress, metrics, artifacts and the latest export of a job.',
      tags,
      security: bearerOptional,
      params: JobParams,
      response: {
        200: TrainingJob.describe('The job'),
        404: jobNotFound,
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),

  deleteJob: defineRoute({
    method: 'DELETE',
    url: '/jobs/:job_id',
    schema: {
      operationId: 'deleteJob',
      summary: 'Delete a training job and its files',
      description: 'Removes the job row, config, checkpoints, adapter, merged model, GGUF file and exports. A running job must be cancelled first.',
      tags,
      security: bearerOptional,
      params: JobParams,
      response: {
        200: JobDeleteResult.describe('What was removed'),
        404: jobNotFound,
        409: conflict('The job is still queued, preparing or training; cancel it first'),
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),

  cancelJob: defineRoute({
    method: 'POST',
    url: '/jobs/:job_id/cancel',
    schema: {
      operationId: 'cancelJob',
      summary: 'Cancel a training job',
      description: 'Stops a queued or running job; it ends as failed with error "cancelled by user".',
      tags,
      security: bearerOptional,
      params: JobParams,
      response: {
        200: TrainingJob.describe('The job after cancelling'),
        404: jobNotFound,
        409: conflict('The job has already completed or failed'),
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),

  pauseJob: defineRoute({
    method: 'POST',
    url: '/jobs/:job_id/pause',
    schema: {
      operationId: 'pauseJob',
      summary: 'Pause a training job',
      description:
        'A queued job is paused at once and stays out of the queue. A preparing or training job is paused by its worker: the trainer ' +
        'finishes its step, saves a checkpoint, the checkpoint is stored and the job becomes paused, its worker free (status stays ' +
        'preparing or training until then; follow GET /jobs/{id}). A paused job can be resumed or cancelled.',
      tags,
      security: bearerOptional,
      params: JobParams,
      response: { 200: TrainingJob.describe('The job: paused, or still running until its worker has paused it'), 404: jobNotFound, 409: conflict('The job is not queued or running'), 422: invalidRequest, ...serviceErrors },
    },
  }),

  resumeJob: defineRoute({
    method: 'POST',
    url: '/jobs/:job_id/resume',
    schema: {
      operationId: 'resumeJob',
      summary: 'Resume a paused training job',
      description:
        'Queues the job again; the worker that takes it (any) continues from its last stored checkpoint with the same step count, data ' +
        'order and learning-rate schedule as an uninterrupted run.',
      tags,
      security: bearerOptional,
      params: JobParams,
      response: { 200: TrainingJob.describe('The job, queued'), 404: jobNotFound, 409: conflict('The job is not paused'), 422: invalidRequest, ...serviceErrors },
    },
  }),

  streamJobEvents: defineRoute({
    method: 'GET',
    url: '/jobs/:job_id/events',
    schema: {
      operationId: 'streamJobEvents',
      summary: 'Follow a training job as server-sent events',
      description:
        'A text/event-stream of the job\'s event log, each event named by its kind (`status`, `progress` with a JobProgress, ' +
        '`metrics`, `log`, …) with its sequence number as `id` (send `Last-Event-ID` to resume after it), followed live while ' +
        'the job runs, with a `:` comment every 15 s of silence; the last event is `end` with the final TrainingJob ' +
        '(or `{job_id, deleted: true}`), after which the stream ends.',
      tags,
      security: bearerOptional,
      params: JobParams,
      response: {
        200: mediaResponse('text/event-stream', 'The job\'s events (each a JobStreamEvent: event, id, data), then `end` with the final job', JobStreamEvent),
        404: jobNotFound,
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),

  getJobDashboard: defineRoute({
    method: 'GET',
    url: '/jobs/:job_id/dashboard',
    schema: {
      operationId: 'getJobDashboard',
      summary: 'A job’s dashboard page',
      description: 'An HTML page with the job’s loss curve and status; tracker_url points here when no experiment tracker is set.',
      tags,
      security: bearerOptional,
      params: JobParams,
      response: {
        200: mediaResponse('text/html', 'The dashboard page', z.string()),
        404: jobNotFound,
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),

  listCheckpoints: defineRoute({
    method: 'GET',
    url: '/jobs/:job_id/checkpoints',
    schema: {
      operationId: 'listCheckpoints',
      summary: 'List a training job’s checkpoints',
      description:
        'The checkpoints the job has stored (save_strategy steps or epoch, and the one a stopping worker saves): step, epoch, ' +
        'train and eval loss, size. Each can be exported, served or evaluated with checkpoint_step, or continued from with ' +
        'training_config.from_job and from_checkpoint_step.',
      tags,
      security: bearerOptional,
      params: JobParams,
      response: {
        200: CheckpointList.describe('The job’s checkpoints'),
        404: jobNotFound,
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),

  listWorkers: defineRoute({
    method: 'GET',
    url: '/workers',
    schema: {
      operationId: 'listWorkers',
      summary: 'List the live workers and the queue lanes',
      description:
        'Every worker whose heartbeat is fresher than WORKER_TIMEOUT_S: its host, devices (CUDA GPUs and memory, CPU), the queues it ' +
        'serves and what it is working on, and each queue lane: entries waiting and running, the oldest one\'s wait, its live workers ' +
        '(the numbers of GET /metrics). Submit-time checks (QLoRA needs CUDA) read the same rows.',
      tags: ['workers'],
      // As every endpoint outside the interface's five: AUTH_MODE=none takes it without a credential (#40).
      security: bearerOptional,
      response: {
        200: WorkerList.describe('Live workers'),
        ...serviceErrors,
      },
    },
  }),
};
