// /datasets: upload a raw file and list uploads, process one into ChatML splits, list and read processed datasets, and
// delete a processed dataset or an upload.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { invalidField, NotFound, PayloadTooLarge } from '@ftp/platform';
import { MULTIPART_LIMITS, preprocessingRoutes, type Delimiter } from '@ftp/schema';
import { queueProcessing } from '@ftp/jobs/training';
import {
  beginProcessing, datasetSource, deleteDataset, discardUpload, findOwnDataset, needsWorker, parseDelimiterField, presentDatasetSummary, presentProcessedDataset, presentProcessingResult,
  presentUpload, presentUploadList, processDataset, receiveUploadPart, recordUpload, type ReceivedUpload,
} from '@ftp/datasets';

const FILE_PART = 'file';
const DELIMITER_FIELD = 'delimiter';

export async function datasetRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  routes.route({
    ...preprocessingRoutes.uploadDataset,
    handler: async (request) => {
      const missingFile = () =>
        invalidField(['body', FILE_PART], 'send multipart/form-data with one binary part named "file"', 'missing');
      if (!request.isMultipart()) throw missingFile();
      // Form fields may come before or after the file (curl sends them in the order given): the file is stored as it
      // streams and described once every part is in, or dropped again when a part is refused.
      let received: ReceivedUpload | undefined;
      let delimiter: Delimiter | undefined;
      try {
        for await (const part of request.parts({ limits: { fileSize: platform.config.MAX_UPLOAD_BYTES, files: 1 } })) {
          if (part.type === 'file') {
            if (part.fieldname !== FILE_PART) {
              part.file.resume();
              throw invalidField(['body', FILE_PART], `the file part is named ${JSON.stringify(part.fieldname)}; name it "file"`, 'missing');
            }
            received = await receiveUploadPart(platform, request.userId, part);
          } else if (part.valueTruncated) {
            throw new PayloadTooLarge(`the multipart field ${JSON.stringify(part.fieldname)} is longer than ${MULTIPART_LIMITS.fieldSize} bytes`);
          } else if (part.fieldname === DELIMITER_FIELD) {
            delimiter = parseDelimiterField(part.value);
          }
        }
      } catch (err) {
        if (received) await discardUpload(platform, received);
        throw err;
      }
      if (!received) throw missingFile();
      return presentUpload(await recordUpload(platform, request.userId, received, { delimiter }), platform.blobs);
    },
  });

  routes.route({
    ...preprocessingRoutes.listUploads,
    // Training data only: a /v1 batch's input and output files are no dataset (/v1/files lists them).
    handler: async (request) => presentUploadList(await platform.datasets.listRaw(request.userId, 'fine-tune'), platform.blobs),
  });

  routes.route({
    ...preprocessingRoutes.processDataset,
    handler: async (request) => {
      const body = request.body;
      const source = await datasetSource(platform, request.userId, body);
      if (!needsWorker(body)) return presentProcessingResult(await processDataset(platform, request.userId, body, source), platform.blobs);
      // A language model augments it: minutes, so a worker does it; the answer says processing.
      const row = await beginProcessing(platform, request.userId, body, source);
      await queueProcessing(platform, row, body.config.augmentation_config!.llm_api_key!);
      return presentProcessingResult(row, platform.blobs);
    },
  });

  routes.route({
    ...preprocessingRoutes.listDatasets,
    handler: async (request) => ({
      datasets: (await platform.datasets.listProcessed(request.userId)).map(presentDatasetSummary),
    }),
  });

  routes.route({
    ...preprocessingRoutes.getDataset,
    handler: async (request) => {
      const row = await platform.datasets.getProcessed(request.userId, request.params.processed_dataset_id);
      if (!row) throw new NotFound('processed dataset', request.params.processed_dataset_id);
      return presentProcessedDataset(row, platform.blobs);
    },
  });

  routes.route({
    ...preprocessingRoutes.deleteDataset,
    handler: async (request) => {
      const id = request.params.processed_dataset_id;
      const dataset = await findOwnDataset(platform, request.userId, id);
      if (!dataset) throw new NotFound('processed dataset or upload', id, 'a processed dataset id (pd_…) from GET /datasets, or an upload’s dataset_id (ds_…) from GET /datasets/uploads');
      return deleteDataset(platform, request.userId, dataset, { cancelJobs: request.query.cancel_jobs === 'true' });
    },
  });
}
