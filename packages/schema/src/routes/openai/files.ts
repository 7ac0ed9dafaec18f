// Route contracts of /v1/files.
import { z } from 'zod';
import { FileDeleted, FileList, FileListQuery, FileObject } from '../../openai/files.ts';
import { DatasetDeleteQuery } from '../../preprocessing.ts';
import { bearerRequired, defineRoute, mediaResponse } from '../contract.ts';
import { BinaryFile } from '../export.ts';
import { common, error, invalid, notFound } from './common.ts';

const FileId = z.object({ file_id: z.string().min(1).max(256) });

export const fileRoutes = {
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
};
