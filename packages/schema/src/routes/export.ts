// Route contracts of the export service (interface.md 4.3 and the download endpoint of decisions.md).
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { DownloadQuery, ExportCreateResult, ExportDetails, ExportList, ExportParams, ExportRequest } from '../export.ts';
import {
  bearerRequired,
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

const tags = ['exports'] as const;
const jobNotFound = notFound('training job');

/** The handler sends a stream or buffer, which fastify passes through unserialised. */
export const BinaryFile = z.custom<Readable | Buffer>().meta({ type: 'string', format: 'binary' });

export const exportRoutes = {
  getHealth: healthRoute('export'),
  getMetrics: metricsRoute(),

  createExport: defineRoute({
    method: 'POST',
    url: '/exports',
    schema: {
      operationId: 'createExport',
      summary: 'Export a trained job’s model',
      description:
        'Starts an export job that writes the adapter, merged model or GGUF file (with an Ollama Modelfile) to the blob store ' +
        'and/or a model-hub repository. Follow it through latest_export of GET /exports/{job_id}.',
      tags,
      security: bearerRequired,
      body: ExportRequest,
      response: {
        200: ExportCreateResult.describe('The export was started'),
        400: malformedJson,
        404: jobNotFound,
        409: conflict('The training job has not completed'),
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),

  listExports: defineRoute({
    method: 'GET',
    url: '/exports',
    schema: {
      operationId: 'listExports',
      summary: 'List the caller’s jobs that have exports',
      description: 'Every job of the caller with something exported (a file to download or a hub repo), without export records; the folders training itself stores (artifacts.raw) are not exports.',
      tags,
      security: bearerRequired,
      response: {
        200: ExportList.describe('Jobs with exports'),
        ...serviceErrors,
      },
    },
  }),

  getExport: defineRoute({
    method: 'GET',
    url: '/exports/:job_id',
    schema: {
      operationId: 'getExport',
      summary: 'Get a job’s artifacts and latest export',
      description: 'Artifact locations by variant and the most recent export record of the job.',
      tags,
      security: bearerRequired,
      params: ExportParams,
      response: {
        200: ExportDetails.describe('The job’s artifacts'),
        404: jobNotFound,
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),

  downloadExport: defineRoute({
    method: 'GET',
    url: '/exports/:job_id/download',
    schema: {
      operationId: 'downloadExport',
      summary: 'Download a file artifact',
      description: 'Streams the `file` variant of the chosen artifact type (adapter, merged or onnx archive, or the GGUF file); with type onnx and variant, one ONNX model file.',
      tags,
      security: bearerRequired,
      params: ExportParams,
      querystring: DownloadQuery,
      response: {
        200: mediaResponse('application/octet-stream', 'The artifact file', BinaryFile),
        404: notFound('file artifact of this type for a training job'),
        409: conflict('The ONNX variant keeps its weights in a second file (a model over 2 GB): download the folder'),
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),
};
