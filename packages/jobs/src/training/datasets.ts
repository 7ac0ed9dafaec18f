// Processed datasets across processes: a dataset augmented with a language model is processed on a worker (its row
// `processing` from the request on, its llm_api_key sealed under the dataset's id until the worker is done), and only
// a `ready` dataset can be trained or evaluated on (decisions.md, "Preprocessing").
import { Conflict, invalidField, NotFound, ServiceUnavailable, type Platform, type ProcessedDatasetRow } from '@ftp/platform';
import { augmentQueue } from '../queues/index.ts';

/** Seals the key and queues the dataset's processing; a queue that cannot take it fails the dataset (503). */
export async function queueProcessing(platform: Platform, row: ProcessedDatasetRow, llmApiKey: string): Promise<void> {
  const id = row.processed_dataset_id;
  await platform.secrets.put(id, { llmApiKey });
  try {
    await platform.queue.add(augmentQueue, { processedDatasetId: id });
  } catch (err) {
    await platform.secrets.drop(id);
    await platform.datasets.failProcessing(id, null, 'the job queue was not available; process the dataset again');
    throw new ServiceUnavailable('queue', `the job queue is not available (${(err as Error).message}); try again later`);
  }
}

/** The caller's processed dataset when it is ready; 404 when there is none, 409 while processing or once failed. The
 *  id of one of the caller's uploads instead is a 422 at `loc` saying to process it first (#39: it said "not found",
 *  and a user who had just uploaded the file could not tell why). */
export async function readyDataset(platform: Platform, userId: string, processedDatasetId: string, loc: string[] = ['body', 'processed_dataset_id']): Promise<ProcessedDatasetRow> {
  const dataset = await platform.datasets.getProcessed(userId, processedDatasetId);
  if (!dataset) {
    const upload = await platform.datasets.getRaw(userId, processedDatasetId);
    if (upload) {
      throw invalidField(loc, `${processedDatasetId} is an upload (${upload.filename}), not a processed dataset: process it first with POST /datasets/process (dataset_id ${processedDatasetId}, and field_mappings for its columns), then use the processed_dataset_id that answers`, 'unprocessed_upload');
    }
    throw new NotFound('processed dataset', processedDatasetId);
  }
  if (dataset.status === 'processing') {
    const progress = dataset.progress ? ` (${dataset.progress.done} of ${dataset.progress.total} rows)` : '';
    throw new Conflict(`processed dataset ${processedDatasetId} is still being processed${progress}; wait until GET /datasets/${processedDatasetId} says status ready`);
  }
  if (dataset.status === 'failed') {
    throw new Conflict(`processed dataset ${processedDatasetId} failed to process (${dataset.error ?? 'no reason recorded'}); process the dataset again`);
  }
  return dataset;
}
