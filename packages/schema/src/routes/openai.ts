// Route contracts of the OpenAI-compatible surface (/v1): files, fine-tuning jobs, models, chat completions and responses.
// Every error is OpenAI's body (OpenAiError) with the statuses the SDKs expect: a request that does not validate is a
// 400 invalid_request_error naming the field in `param` (not our 422), 401, 404, 409, 413, 500, 503, 504.
import { z } from 'zod';
import { BinaryFile } from './export.ts';
import { DatasetDeleteQuery } from '../preprocessing.ts';
import {
  BatchList,
  BatchObject,
  ChatCompletion,
  ChatCompletionStreamEvent,
  ChatCompletionRequest,
  CheckpointPermissionDeleted,
  CheckpointPermissionList,
  CheckpointPermissionQuery,
  CompleteUploadRequest,
  CreateBatchRequest,
  CreateCheckpointPermissionRequest,
  CreateFineTuningJobRequest,
  CreateUploadRequest,
  FileDeleted,
  FileList,
  FileListQuery,
  FileObject,
  FineTuningCheckpointList,
  FineTuningJob,
  FineTuningJobEventList,
  FineTuningJobList,
  GraderRunRequest,
  GraderRunResponse,
  GraderValidateRequest,
  GraderValidateResponse,
  ListQuery,
  ModelDeleted,
  ModelList,
  ModelObject,
  OpenAiError,
  UploadObject,
  UploadPartObject,
  CreateWebhookEndpointRequest,
  RotateWebhookSecretRequest,
  TestWebhookEndpointRequest,
  UpdateWebhookEndpointRequest,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointDeleted,
  WebhookEndpointList,
  WebhookEndpointTestResult,
  WebhookEndpointWithSecret,
  WebhookEventTypeList,
} from '../openai.ts';
import { CreateResponseRequest, ResponseObject, ResponseStreamEvent } from '../openai-responses.ts';
import { bearerRequired, defineRoute, healthRoute, mediaResponse, metricsRoute } from './contract.ts';

const error = (why: string) => OpenAiError.describe(why);
const common = {
  401: error('The bearer token is missing or invalid'),
  500: error('Internal error; the message carries the request id'),
  503: error('A dependency (database, storage, queue, or a worker for the queue) is unavailable; the message names it'),
} as const;
const invalid = error('The request is invalid; param names the field');
const notFound = (what: string) => error(`No ${what} with this id belongs to the caller`);
const FileId = z.object({ file_id: z.string().min(1).max(256) });
const JobId = z.object({ fine_tuning_job_id: z.string().min(1).max(256) });
const ModelId = z.object({ model: z.string().min(1).max(512) });
const UploadId = z.object({ upload_id: z.string().min(1).max(256) });
const uploadEnded = error('The upload has already ended (completed, cancelled or expired)');
const BatchId = z.object({ batch_id: z.string().min(1).max(256) });
const EndpointId = z.object({ webhook_endpoint_id: z.string().min(1).max(256) });
const webhookTags = ['webhooks'];
const refusedTarget = error('The URL is not one events may be sent to (param url): not https, or a private, loopback or link-local address (WEBHOOK_ALLOW_PRIVATE)');
const CheckpointName = z.object({ fine_tuned_model_checkpoint: z.string().min(1).max(512).describe('A checkpoint’s model name, ft:…:ckpt-step-<n>') });
const checkpointNotFound = notFound('checkpoint (ft:…:ckpt-step-<n>, stored)');

export const openaiRoutes = {
  getHealth: healthRoute('OpenAI-compatible'),
  getMetrics: metricsRoute(OpenAiError),

  createFile: defineRoute({
    method: 'POST',
    url: '/v1/files',
    schema: {
      operationId: 'createFile',
      summary: 'Upload a fine-tuning file',
      description:
        'multipart/form-data with a `file` part (chat JSONL: {"messages": […]}; or preference JSONL: {"input", "preferred_output", ' +
        '"non_preferred_output"}) and `purpose` fine-tune. Stored through the same path as POST /datasets/upload (same size limit, ' +
        'MAX_UPLOAD_BYTES); its lines are validated when a job uses it.',
      tags: ['files'],
      consumes: ['multipart/form-data'],
      security: bearerRequired,
      response: { 200: FileObject, 400: invalid, 413: error('The file is larger than MAX_UPLOAD_BYTES'), ...common },
    },
  }),

  listFiles: defineRoute({
    method: 'GET',
    url: '/v1/files',
    schema: {
      operationId: 'listFiles',
      summary: 'List the caller’s files',
      description: 'Every upload of the caller (through /v1/files or /datasets/upload), newest first unless order is asc.',
      tags: ['files'],
      security: bearerRequired,
      querystring: FileListQuery,
      response: { 200: FileList, 400: invalid, ...common },
    },
  }),

  retrieveFile: defineRoute({
    method: 'GET',
    url: '/v1/files/:file_id',
    schema: {
      operationId: 'retrieveFile',
      summary: 'A file',
      tags: ['files'],
      security: bearerRequired,
      params: FileId,
      response: { 200: FileObject, 400: invalid, 404: notFound('file'), ...common },
    },
  }),

  downloadFile: defineRoute({
    method: 'GET',
    url: '/v1/files/:file_id/content',
    schema: {
      operationId: 'downloadFile',
      summary: 'A file’s bytes, as uploaded',
      tags: ['files'],
      security: bearerRequired,
      params: FileId,
      response: { 200: mediaResponse('application/octet-stream', 'The file as uploaded', BinaryFile), 400: invalid, 404: notFound('file'), ...common },
    },
  }),

  deleteFile: defineRoute({
    method: 'DELETE',
    url: '/v1/files/:file_id',
    schema: {
      operationId: 'deleteFile',
      summary: 'Delete a file',
      description:
        'Removes the upload and its stored bytes. Datasets and jobs made from it keep their own copy. A file a batch not yet ended reads as its input, ' +
        'or that a processed dataset is still being made from, is a 409 naming them, unless cancel_jobs=true (an addition of this server): then the ' +
        'batches are cancelled, the datasets being made fail, and the file is deleted.',
      tags: ['files'],
      security: bearerRequired,
      params: FileId,
      querystring: DatasetDeleteQuery,
      response: { 200: FileDeleted, 400: invalid, 404: notFound('file'), 409: error('A batch or a dataset being processed still reads the file; message names them'), ...common },
    },
  }),

  createUpload: defineRoute({
    method: 'POST',
    url: '/v1/uploads',
    schema: {
      operationId: 'createUpload',
      summary: 'Start a file sent in parts',
      description:
        'OpenAI’s Uploads API: declare the file’s bytes, name and purpose, send its parts (POST /v1/uploads/{id}/parts, at most 64 MiB ' +
        'each), then complete it with the part ids in order. An upload takes parts for an hour, then expires and its parts are removed.',
      tags: ['files'],
      security: bearerRequired,
      body: CreateUploadRequest,
      response: { 200: UploadObject, 400: invalid, ...common },
    },
  }),

  addUploadPart: defineRoute({
    method: 'POST',
    url: '/v1/uploads/:upload_id/parts',
    schema: {
      operationId: 'addUploadPart',
      summary: 'Add a part to an upload',
      description: 'multipart/form-data with a `data` part of at most 64 MiB (less where MAX_UPLOAD_BYTES is lower), stored as it streams.',
      tags: ['files'],
      consumes: ['multipart/form-data'],
      security: bearerRequired,
      params: UploadId,
      response: { 200: UploadPartObject, 400: invalid, 404: notFound('upload'), 409: uploadEnded, 413: error('The part is larger than 64 MiB, or the parts sent would add up to more than the upload’s bytes and one part more'), ...common },
    },
  }),

  completeUpload: defineRoute({
    method: 'POST',
    url: '/v1/uploads/:upload_id/complete',
    schema: {
      operationId: 'completeUpload',
      summary: 'Join an upload’s parts into a file',
      description:
        'The parts named, in that order, become one file (as POST /v1/files makes); they must be this upload’s, each named once, and add ' +
        'up to the bytes declared; md5, when given, must be the joined file’s. The upload is returned with its file.',
      tags: ['files'],
      security: bearerRequired,
      params: UploadId,
      body: CompleteUploadRequest,
      response: { 200: UploadObject, 400: invalid, 404: notFound('upload'), 409: uploadEnded, ...common },
    },
  }),

  cancelUpload: defineRoute({
    method: 'POST',
    url: '/v1/uploads/:upload_id/cancel',
    schema: {
      operationId: 'cancelUpload',
      summary: 'Cancel an upload',
      description: 'Its parts are removed; it takes no more.',
      tags: ['files'],
      security: bearerRequired,
      params: UploadId,
      response: { 200: UploadObject, 400: invalid, 404: notFound('upload'), 409: uploadEnded, ...common },
    },
  }),

  createBatch: defineRoute({
    method: 'POST',
    url: '/v1/batches',
    schema: {
      operationId: 'createBatch',
      summary: 'Answer a file of requests',
      description:
        'OpenAI’s Batch API: each line of the input file (purpose batch) is a /v1/chat/completions or /v1/responses request ' +
        '({custom_id, method: POST, url, body}) on any model the stack serves. Workers answer the lines through the same engines as ' +
        'chat, several at a time; the output file holds the answers, the error file the lines that failed (a bad line is an error ' +
        'line, never a failed batch). A batch a worker was answering when it stopped goes on elsewhere without answering a line twice.',
      tags: ['batches'],
      security: bearerRequired,
      body: CreateBatchRequest,
      response: { 200: BatchObject, 400: invalid, 404: notFound('file'), ...common },
    },
  }),

  listBatches: defineRoute({
    method: 'GET',
    url: '/v1/batches',
    schema: {
      operationId: 'listBatches',
      summary: 'List the caller’s batches',
      description: 'Newest first.',
      tags: ['batches'],
      security: bearerRequired,
      querystring: ListQuery,
      response: { 200: BatchList, 400: invalid, ...common },
    },
  }),

  retrieveBatch: defineRoute({
    method: 'GET',
    url: '/v1/batches/:batch_id',
    schema: {
      operationId: 'retrieveBatch',
      summary: 'A batch',
      description: 'Its status and request_counts as the workers answer its lines.',
      tags: ['batches'],
      security: bearerRequired,
      params: BatchId,
      response: { 200: BatchObject, 400: invalid, 404: notFound('batch'), ...common },
    },
  }),

  cancelBatch: defineRoute({
    method: 'POST',
    url: '/v1/batches/:batch_id/cancel',
    schema: {
      operationId: 'cancelBatch',
      summary: 'Cancel a batch',
      description: 'It is cancelling until its worker stops between lines and writes the lines answered so far to the output file; then cancelled.',
      tags: ['batches'],
      security: bearerRequired,
      params: BatchId,
      response: { 200: BatchObject, 400: invalid, 404: notFound('batch'), 409: error('The batch has already ended'), ...common },
    },
  }),

  createCheckpointPermissions: defineRoute({
    method: 'POST',
    url: '/v1/fine_tuning/checkpoints/:fine_tuned_model_checkpoint/permissions',
    schema: {
      operationId: 'createCheckpointPermissions',
      summary: 'Let other users run one of your checkpoints',
      description:
        'Each user named (OpenAI’s project_ids are user ids here) may then chat with the checkpoint, evaluate it and fine-tune from it by its ' +
        'name; nothing else of the job is shared (its events, files, exports and other checkpoints stay the owner’s). Only the owner ' +
        'manages permissions. Granting one already granted returns it unchanged.',
      tags: ['fine-tuning'],
      security: bearerRequired,
      params: CheckpointName,
      body: CreateCheckpointPermissionRequest,
      response: { 200: CheckpointPermissionList, 400: invalid, 404: checkpointNotFound, ...common },
    },
  }),

  listCheckpointPermissions: defineRoute({
    method: 'GET',
    url: '/v1/fine_tuning/checkpoints/:fine_tuned_model_checkpoint/permissions',
    schema: {
      operationId: 'listCheckpointPermissions',
      summary: 'The users let run one of your checkpoints',
      description: 'Newest first unless order is ascending; project_id picks one user’s.',
      tags: ['fine-tuning'],
      security: bearerRequired,
      params: CheckpointName,
      querystring: CheckpointPermissionQuery,
      response: { 200: CheckpointPermissionList, 400: invalid, 404: checkpointNotFound, ...common },
    },
  }),

  deleteCheckpointPermission: defineRoute({
    method: 'DELETE',
    url: '/v1/fine_tuning/checkpoints/:fine_tuned_model_checkpoint/permissions/:permission_id',
    schema: {
      operationId: 'deleteCheckpointPermission',
      summary: 'Stop letting a user run one of your checkpoints',
      description: 'The user’s requests naming the checkpoint are a 404 from then on; jobs it already trained from it keep their own models.',
      tags: ['fine-tuning'],
      security: bearerRequired,
      params: CheckpointName.extend({ permission_id: z.string().min(1).max(256) }),
      response: { 200: CheckpointPermissionDeleted, 400: invalid, 404: notFound('checkpoint, or permission of it,'), ...common },
    },
  }),

  createWebhookEndpoint: defineRoute({
    method: 'POST',
    url: '/v1/webhook_endpoints',
    schema: {
      operationId: 'createWebhookEndpoint',
      summary: 'Send events to a URL',
      description:
        'OpenAI’s webhook endpoints: each event of the caller whose type is in event_types is POSTed to url as OpenAI’s event object, ' +
        'signed per Standard Webhooks with signing_secret (shown once here), which client.webhooks.unwrap verifies. At least once: ' +
        'a delivery is retried with backoff for over 24 hours (WEBHOOK_BACKOFF_S) with the same webhook-id, freshly signed at each attempt.',
      tags: webhookTags,
      security: bearerRequired,
      body: CreateWebhookEndpointRequest,
      response: { 200: WebhookEndpointWithSecret, 400: refusedTarget, ...common },
    },
  }),

  listWebhookEndpoints: defineRoute({
    method: 'GET',
    url: '/v1/webhook_endpoints',
    schema: {
      operationId: 'listWebhookEndpoints',
      summary: 'The caller’s webhook endpoints',
      description: 'Newest first.',
      tags: webhookTags,
      security: bearerRequired,
      querystring: ListQuery,
      response: { 200: WebhookEndpointList, 400: invalid, ...common },
    },
  }),

  retrieveWebhookEndpoint: defineRoute({
    method: 'GET',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id',
    schema: {
      operationId: 'retrieveWebhookEndpoint',
      summary: 'A webhook endpoint',
      description: 'Without its secret (signing_secret_hint shows its end).',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId,
      response: { 200: WebhookEndpoint, 400: invalid, 404: notFound('webhook endpoint'), ...common },
    },
  }),

  updateWebhookEndpoint: defineRoute({
    method: 'POST',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id',
    schema: {
      operationId: 'updateWebhookEndpoint',
      summary: 'Change a webhook endpoint',
      description: 'Its name, url or event_types (the whole list); events already written keep going where they were meant to.',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId,
      body: UpdateWebhookEndpointRequest,
      response: { 200: WebhookEndpoint, 400: refusedTarget, 404: notFound('webhook endpoint'), ...common },
    },
  }),

  deleteWebhookEndpoint: defineRoute({
    method: 'DELETE',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id',
    schema: {
      operationId: 'deleteWebhookEndpoint',
      summary: 'Stop sending events to an endpoint',
      description: 'Its deliveries not yet made are dropped.',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId,
      response: { 200: WebhookEndpointDeleted, 400: invalid, 404: notFound('webhook endpoint'), ...common },
    },
  }),

  rotateWebhookSecret: defineRoute({
    method: 'POST',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id/rotate_secret',
    schema: {
      operationId: 'rotateWebhookSecret',
      summary: 'A new signing secret',
      description: 'Shown once. The previous one stops signing at once, or signs beside it for 24 hours with keep_old_secret_active_for_24_hours.',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId,
      body: RotateWebhookSecretRequest.optional(),
      response: { 200: WebhookEndpointWithSecret, 400: invalid, 404: notFound('webhook endpoint'), ...common },
    },
  }),

  testWebhookEndpoint: defineRoute({
    method: 'POST',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id/test',
    schema: {
      operationId: 'testWebhookEndpoint',
      summary: 'Send a sample event now',
      description: 'One signed event of event_type (its data names no real resource), sent at once, not retried; status_code is what the endpoint answered.',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId,
      body: TestWebhookEndpointRequest,
      response: { 200: WebhookEndpointTestResult, 400: refusedTarget, 404: notFound('webhook endpoint'), ...common },
    },
  }),

  listWebhookDeliveries: defineRoute({
    method: 'GET',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id/deliveries',
    schema: {
      operationId: 'listWebhookDeliveries',
      summary: 'The events sent to an endpoint (ours)',
      description: 'The last 100, newest first: status (pending, delivered, failed), attempts, the last response code or error.',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId,
      response: { 200: WebhookDeliveryList, 400: invalid, 404: notFound('webhook endpoint'), ...common },
    },
  }),

  redeliverWebhook: defineRoute({
    method: 'POST',
    url: '/v1/webhook_endpoints/:webhook_endpoint_id/deliveries/:delivery_id/redeliver',
    schema: {
      operationId: 'redeliverWebhook',
      summary: 'Send an event again (ours)',
      description: 'The delivery is pending again and goes out at once, with its event’s webhook-id.',
      tags: webhookTags,
      security: bearerRequired,
      params: EndpointId.extend({ delivery_id: z.string().min(1).max(256) }),
      response: { 200: WebhookDelivery, 400: invalid, 404: notFound('delivery of this endpoint'), ...common },
    },
  }),

  listWebhookEventTypes: defineRoute({
    method: 'GET',
    url: '/v1/webhook_event_types',
    schema: {
      operationId: 'listWebhookEventTypes',
      summary: 'The event types an endpoint can subscribe to',
      description: 'OpenAI’s fine_tuning.job.* and batch.*, and ours (fine_tuning.job.started, export.*, evaluation.completed).',
      tags: webhookTags,
      security: bearerRequired,
      response: { 200: WebhookEventTypeList, ...common },
    },
  }),

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

  validateGrader: defineRoute({
    method: 'POST',
    url: '/v1/fine_tuning/alpha/graders/validate',
    schema: {
      operationId: 'validateGrader',
      summary: 'Check a grader',
      description: 'Answers the grader when it can run: its fields, templates (variables of item and sample), a multi grader’s formula, a python grader’s source (compiled on a worker, never run), and a judge the caller may use (404 model_not_found otherwise).',
      tags: ['fine-tuning'],
      security: bearerRequired,
      body: GraderValidateRequest,
      response: { 200: GraderValidateResponse, 400: invalid, 404: notFound('judge model'), ...common },
    },
  }),

  runGrader: defineRoute({
    method: 'POST',
    url: '/v1/fine_tuning/alpha/graders/run',
    schema: {
      operationId: 'runGrader',
      summary: 'Grade one answer',
      description:
        'Grades model_sample against item on a worker (the evaluate queue), as a reinforcement job grades each sampled answer: the reward, ' +
        'each sub-grader’s (multi), and why it is 0 when the answer could not be graded (metadata.errors; a python grader runs sandboxed).',
      tags: ['fine-tuning'],
      security: bearerRequired,
      body: GraderRunRequest,
      response: { 200: GraderRunResponse, 400: invalid, 404: notFound('judge model'), 504: error('The worker did not answer within INFERENCE_TIMEOUT_MS'), ...common },
    },
  }),

  listModels: defineRoute({
    method: 'GET',
    url: '/v1/models',
    schema: {
      operationId: 'listModels',
      summary: 'Base models in the model store and the caller’s fine-tuned models',
      tags: ['models'],
      security: bearerRequired,
      response: { 200: ModelList, ...common },
    },
  }),

  retrieveModel: defineRoute({
    method: 'GET',
    url: '/v1/models/:model',
    schema: {
      operationId: 'retrieveModel',
      summary: 'A model',
      tags: ['models'],
      security: bearerRequired,
      params: ModelId,
      response: { 200: ModelObject, 400: invalid, 404: notFound('model'), ...common },
    },
  }),

  deleteModel: defineRoute({
    method: 'DELETE',
    url: '/v1/models/:model',
    schema: {
      operationId: 'deleteModel',
      summary: 'Delete a fine-tuned model',
      description: 'Deletes the training job behind it and everything it stored (as DELETE /jobs/{id}). Base models cannot be deleted here.',
      tags: ['models'],
      security: bearerRequired,
      params: ModelId,
      response: { 200: ModelDeleted, 400: invalid, 404: notFound('fine-tuned model'), 409: error('The job is still running, or the model is a base model'), ...common },
    },
  }),

  createChatCompletion: defineRoute({
    method: 'POST',
    url: '/v1/chat/completions',
    schema: {
      operationId: 'createChatCompletion',
      summary: 'Chat with a base, fine-tuned or checkpoint model',
      description:
        'Runs on a worker: llama.cpp on the model’s GGUF (made after training in the background, or on first use), or transformers when no GGUF can be made (vision). ' +
        'A first use that has to prepare the model is said, with a stream, in SSE comments (: preparing: …) before the first chunk. ' +
        'With stream true the answer is text/event-stream: chat.completion.chunk events, then data: [DONE]. response_format ' +
        'json_object/json_schema is enforced by a llama.cpp grammar. Longer than INFERENCE_TIMEOUT_MS is a 504.',
      tags: ['chat'],
      security: bearerRequired,
      body: ChatCompletionRequest,
      response: {
        200: {
          description: 'The completion; with stream true, a text/event-stream of ChatCompletionChunk events, then [DONE]',
          content: { 'application/json': { schema: ChatCompletion }, 'text/event-stream': { schema: ChatCompletionStreamEvent } },
        },
        400: invalid,
        404: notFound('model'),
        409: error('The fine-tuned model does not exist yet (its job has not succeeded)'),
        ...common,
        504: error('The request did not finish within INFERENCE_TIMEOUT_MS'),
      },
    },
  }),
  createResponse: defineRoute({
    method: 'POST',
    url: '/v1/responses',
    schema: {
      operationId: 'createResponse',
      summary: 'A response from a base, fine-tuned or checkpoint model (OpenAI’s Responses API, stateless)',
      description:
        'Runs as a chat completion does (the same models, engines, function tools and json_schema grammar): instructions are a system ' +
        'message first, input the conversation (messages, function_call and function_call_output items). Nothing is stored: store true, ' +
        'previous_response_id, conversation and background are a 400 (send the whole conversation in input), and so are built-in tools, ' +
        'reasoning settings (no reasoning model is served) and image, file or audio input. With stream true the answer is ' +
        'text/event-stream: OpenAI’s response.* events with sequence_number, ending with response.completed (or response.incomplete ' +
        'when cut at max_output_tokens); a first use that has to prepare the model is said in SSE comments (: preparing: …) first.',
      tags: ['responses'],
      security: bearerRequired,
      body: CreateResponseRequest,
      response: {
        200: {
          description: 'The response; with stream true, a text/event-stream of response events',
          content: { 'application/json': { schema: ResponseObject }, 'text/event-stream': { schema: ResponseStreamEvent } },
        },
        400: invalid,
        404: notFound('model'),
        409: error('The fine-tuned model does not exist yet (its job has not succeeded)'),
        ...common,
        504: error('The request did not finish within INFERENCE_TIMEOUT_MS'),
      },
    },
  }),
};
