// Route contracts of /v1/batches.
import { z } from 'zod';
import { BatchList, BatchObject, CreateBatchRequest } from '../../openai/batches.ts';
import { ListQuery } from '../../openai/common.ts';
import { bearerRequired, defineRoute } from '../contract.ts';
import { common, error, invalid, notFound } from './common.ts';

const BatchId = z.object({ batch_id: z.string().min(1).max(256) });

export const batchRoutes = {
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
};
