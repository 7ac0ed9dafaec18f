// Route contracts of the preprocessing service (interface.md 4.1): upload, process, list, get, delete; and the list of
// uploads (decisions.md adds it: an upload not processed yet is otherwise invisible).
import { ErrorBody } from '../common.ts';
import {
  DatasetDeleteParams,
  DatasetDeleteQuery,
  DatasetDeleteResult,
  DatasetList,
  ProcessDatasetRequest,
  ProcessedDataset,
  ProcessedDatasetParams,
  ProcessingResult,
  UploadList,
  UploadResult,
} from '../preprocessing.ts';
import {
  bearerOptional,
  conflict,
  defineRoute,
  healthRoute,
  metricsRoute,
  invalidRequest,
  malformedJson,
  notFound,
  serviceErrors,
} from './contract.ts';

const tags = ['datasets'] as const;

export const preprocessingRoutes = {
  getHealth: healthRoute('preprocessing'),
  getMetrics: metricsRoute(),

  uploadDataset: defineRoute({
    method: 'POST',
    url: '/datasets/upload',
    schema: {
      operationId: 'uploadDataset',
      summary: 'Upload a raw dataset file',
      description:
        'multipart/form-data with one required binary part `file`: CSV, TSV, JSON (an array of objects, or an object with one array field), JSONL or Parquet. ' +
        'The file is streamed to blob storage as uploaded (limit MAX_UPLOAD_BYTES, default 1 GiB) and described by its first rows, columns and exact row count. ' +
        'Delimited text is read as people write it: the delimiter (comma, semicolon, tab or pipe) is detected from the content, or chosen by the optional ' +
        'field `delimiter`, and reported as `delimiter`; text may be UTF-8 (a BOM is dropped), UTF-16 with a BOM, or Windows-1252 (CSV and TSV only). ' +
        'What may have been read otherwise than meant is in `warnings`.',
      tags,
      consumes: ['multipart/form-data'],
      security: bearerOptional,
      response: {
        200: UploadResult.describe('The stored file and what it contains'),
        400: ErrorBody.describe('The file cannot be parsed or is not an accepted format; detail names the row or the accepted formats'),
        413: ErrorBody.describe('The file is larger than MAX_UPLOAD_BYTES'),
        422: invalidRequest.describe('No `file` part, a file name with NUL, or a `delimiter` field that is not one of , ; | or a tab'),
        ...serviceErrors,
      },
    },
  }),

  processDataset: defineRoute({
    method: 'POST',
    url: '/datasets/process',
    schema: {
      operationId: 'processDataset',
      summary: 'Convert a dataset to ChatML',
      description:
        'Maps columns or templates to messages, normalises whitespace, augments the train split and splits the rows. ' +
        'Which field_mappings keys are required depends on processing_mode; an unknown column in a mapping is a 422 that lists the columns. ' +
        'A user_field and assistant_field that render the same text in every row (one column mapped to both) are a 422 naming both. ' +
        'Without a language-model augmentation method the answer is the dataset, status ready. With use_back_translation, use_paraphrasing ' +
        'or use_synthesis the request is checked (LLM_API_BASE and LLM_MODEL set, llm_api_key given, else 422), the dataset is recorded ' +
        'with status processing and no splits, and a worker finishes it: follow GET /datasets/{processed_dataset_id} (progress) ' +
        'until status is ready, or failed with error.',
      tags,
      security: bearerOptional,
      body: ProcessDatasetRequest,
      response: {
        200: ProcessingResult.describe('The processed dataset with its splits; status processing (no splits yet) when a worker augments it'),
        400: malformedJson,
        404: notFound('uploaded dataset'),
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),

  listDatasets: defineRoute({
    method: 'GET',
    url: '/datasets',
    schema: {
      operationId: 'listDatasets',
      summary: 'List the caller’s processed datasets',
      description: 'Processed datasets owned by the caller, newest first.',
      tags,
      security: bearerOptional,
      response: {
        200: DatasetList.describe('The caller’s processed datasets'),
        ...serviceErrors,
      },
    },
  }),

  listUploads: defineRoute({
    method: 'GET',
    url: '/datasets/uploads',
    schema: {
      operationId: 'listUploads',
      summary: 'List the caller’s uploaded files',
      description: 'Every file of training data the caller uploaded (POST /datasets/upload, or /v1/files with purpose fine-tune), newest first, processed or not: its dataset_id is what POST /datasets/process takes. A /v1 batch\'s input and output files are not listed here (GET /v1/files lists them).',
      tags,
      security: bearerOptional,
      response: {
        200: UploadList.describe('The caller’s uploads'),
        ...serviceErrors,
      },
    },
  }),

  getDataset: defineRoute({
    method: 'GET',
    url: '/datasets/:processed_dataset_id',
    schema: {
      operationId: 'getDataset',
      summary: 'Get a processed dataset',
      description: 'The processed dataset with each split’s row count, file and first records.',
      tags,
      security: bearerOptional,
      params: ProcessedDatasetParams,
      response: {
        200: ProcessedDataset.describe('The processed dataset'),
        404: notFound('processed dataset'),
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),

  deleteDataset: defineRoute({
    method: 'DELETE',
    url: '/datasets/:processed_dataset_id',
    schema: {
      operationId: 'deleteDataset',
      summary: 'Delete a processed dataset or an upload',
      description:
        'A processed dataset (pd_…): removes its rows, files and stored evaluations; the upload it was made from is never deleted. ' +
        'An upload (ds_…): removes the uploaded file; the processed datasets made from it keep their rows and files (kept_processed_datasets). ' +
        'A dataset something still needs is a 409 naming it: for a processed dataset, a training job queued, preparing, training or paused on it, ' +
        'or an evaluation of it waiting or running; for an upload, a /v1 batch not finished whose input it is, or a processed dataset still being ' +
        'made from it (augmentation). With cancel_jobs=true those jobs and batches are cancelled (as POST /jobs/{job_id}/cancel and ' +
        'POST /v1/batches/{batch_id}/cancel do), waiting evaluations are dropped, datasets still processing fail, and the dataset is deleted.',
      tags,
      security: bearerOptional,
      params: DatasetDeleteParams,
      querystring: DatasetDeleteQuery,
      response: {
        200: DatasetDeleteResult.describe('What was removed'),
        404: notFound('processed dataset or upload'),
        409: conflict('A training job, batch, evaluation or processing still needs the dataset; detail names them. Cancel them, or send cancel_jobs=true'),
        422: invalidRequest,
        ...serviceErrors,
      },
    },
  }),
};
