// The datasets domain both faces of the API stand on (preprocessing's /datasets and the OpenAI-compatible /v1/files):
// reading uploaded files in every accepted format, storing uploads, processing them into chat splits, model-hub
// datasets, and the presenters of dataset rows.
export { storeUpload, storeUploadPart, type UploadPart } from './uploads.ts';
export { processDataset, writeProcessedDataset, type SplitRecords } from './processing/process-dataset.ts';
export { uploadSource, type DatasetSource } from './processing/sources.ts';
export { presentDatasetSummary, presentProcessedDataset, presentProcessingResult } from './presenters.ts';
export { byteSourceFromBlob } from './readers/byte-source.ts';
export { processedPrefix, rawUploadKey } from './storage-keys.ts';

/** A model-hub dataset as a processing source. Loaded on first use: the hub client costs ~25 MB of memory a server
 *  without hub datasets never needs. */
export async function loadHubSource(...args: Parameters<typeof import('./processing/hub-source.ts').hubSource>): Promise<import('./processing/sources.ts').DatasetSource> {
  return (await import('./processing/hub-source.ts')).hubSource(...args);
}
