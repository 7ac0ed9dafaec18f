// Route contracts of /v1/fine_tuning/jobs.
import { z } from 'zod';
import { ListQuery } from '../../openai/common.ts';
import { CreateFineTuningJobRequest, FineTuningCheckpointList, FineTuningJob, FineTuningJobEventList, FineTuningJobList } from '../../openai/fine-tuning.ts';
import { bearerRequired, defineRoute } from '../contract.ts';
import { common, error, invalid, notFound } from './common.ts';

const JobId = z.object({ fine_tuning_job_id: z.string().min(1).max(256) });

export const fineTuningRoutes = {
  createFineTuningJob: defineRoute({
    method: 'POST',
    url: '/v1/fine_tuning/jobs',
    schema: {
      operationId: 'createFineTuningJob',
      summary: 'Create a fine-tuning job',
      description:
        'Validates the files line by line (a bad line fails the job in validating_files with its line number), turns them into a ' +
        'processed dataset and queues a training job (LoRA; visible in GET /jobs of the training service). "auto" hyperparameters ' +
        'and the learning-rate rule are in the README ("Coming from OpenAI fine-tuning").',
      tags: ['fine-tuning'],
      security: bearerRequired,
      body: CreateFineTuningJobRequest,
      response: { 200: FineTuningJob, 400: invalid, 404: notFound('file'), ...common },
    },
  }),

  listFineTuningJobs: defineRoute({
    method: 'GET',
    url: '/v1/fine_tuning/jobs',
    schema: {
      operationId: 'listFineTuningJobs',
      summary: 'List the caller’s fine-tuning jobs',
      description: 'Newest first; every training job of the caller, however it was made.',
      tags: ['fine-tuning'],
      security: bearerRequired,
      querystring: ListQuery,
      response: { 200: FineTuningJobList, 400: invalid, ...common },
    },
  }),

  retrieveFineTuningJob: defineRoute({
    method: 'GET',
    url: '/v1/fine_tuning/jobs/:fine_tuning_job_id',
    schema: {
      operationId: 'retrieveFineTuningJob',
      summary: 'A fine-tuning job',
      tags: ['fine-tuning'],
      security: bearerRequired,
      params: JobId,
      response: { 200: FineTuningJob, 400: invalid, 404: notFound('fine-tuning job'), ...common },
    },
  }),

  cancelFineTuningJob: defineRoute({
    method: 'POST',
    url: '/v1/fine_tuning/jobs/:fine_tuning_job_id/cancel',
    schema: {
      operationId: 'cancelFineTuningJob',
      summary: 'Cancel a fine-tuning job',
      tags: ['fine-tuning'],
      security: bearerRequired,
      params: JobId,
      response: { 200: FineTuningJob, 400: invalid, 404: notFound('fine-tuning job'), 409: error('The job has already ended'), ...common },
    },
  }),

  pauseFineTuningJob: defineRoute({
    method: 'POST',
    url: '/v1/fine_tuning/jobs/:fine_tuning_job_id/pause',
    schema: {
      operationId: 'pauseFineTuningJob',
      summary: 'Pause a fine-tuning job',
      description: 'A queued job is paused at once; a running one once its trainer has saved a checkpoint at its next step (status running until then).',
      tags: ['fine-tuning'],
      security: bearerRequired,
      params: JobId,
      response: { 200: FineTuningJob, 400: invalid, 404: notFound('fine-tuning job'), 409: error('The job is not queued or running'), ...common },
    },
  }),

  resumeFineTuningJob: defineRoute({
    method: 'POST',
    url: '/v1/fine_tuning/jobs/:fine_tuning_job_id/resume',
    schema: {
      operationId: 'resumeFineTuningJob',
      summary: 'Resume a paused fine-tuning job',
      description: 'Queued again; it continues from the checkpoint it paused at, with the same steps, data order and learning-rate schedule.',
      tags: ['fine-tuning'],
      security: bearerRequired,
      params: JobId,
      response: { 200: FineTuningJob, 400: invalid, 404: notFound('fine-tuning job'), 409: error('The job is not paused'), ...common },
    },
  }),

  listFineTuningEvents: defineRoute({
    method: 'GET',
    url: '/v1/fine_tuning/jobs/:fine_tuning_job_id/events',
    schema: {
      operationId: 'listFineTuningEvents',
      summary: 'A fine-tuning job’s events, newest first',
      description: 'Status changes, steps (type metrics, with step, train_loss and learning rate) and messages, from the job’s event log.',
      tags: ['fine-tuning'],
      security: bearerRequired,
      params: JobId,
      querystring: ListQuery,
      response: { 200: FineTuningJobEventList, 400: invalid, 404: notFound('fine-tuning job'), ...common },
    },
  }),

  listFineTuningCheckpoints: defineRoute({
    method: 'GET',
    url: '/v1/fine_tuning/jobs/:fine_tuning_job_id/checkpoints',
    schema: {
      operationId: 'listFineTuningCheckpoints',
      summary: 'A fine-tuning job’s checkpoints, newest first',
      description: 'The stored checkpoints (each epoch saves one; the last two are kept); fine_tuned_model_checkpoint works as a model in chat completions.',
      tags: ['fine-tuning'],
      security: bearerRequired,
      params: JobId,
      querystring: ListQuery,
      response: { 200: FineTuningCheckpointList, 400: invalid, 404: notFound('fine-tuning job'), ...common },
    },
  }),
};
