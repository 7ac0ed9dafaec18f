// Route contracts of /v1/models.
import { z } from 'zod';
import { ModelDeleted, ModelList, ModelObject } from '../../openai/models.ts';
import { bearerRequired, defineRoute } from '../contract.ts';
import { common, error, invalid, notFound } from './common.ts';

const ModelId = z.object({ model: z.string().min(1).max(512) });

export const modelRoutes = {
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
};
