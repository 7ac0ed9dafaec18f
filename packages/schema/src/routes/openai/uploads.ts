// Route contracts of /v1/uploads (files sent in parts).
import { z } from 'zod';
import { CompleteUploadRequest, CreateUploadRequest, UploadObject, UploadPartObject } from '../../openai/uploads.ts';
import { bearerRequired, defineRoute } from '../contract.ts';
import { common, error, invalid, notFound } from './common.ts';

const UploadId = z.object({ upload_id: z.string().min(1).max(256) });
const uploadEnded = error('The upload has already ended (completed, cancelled or expired)');

export const uploadRoutes = {
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
};
