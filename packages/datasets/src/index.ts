// The datasets domain both faces of the API stand on (preprocessing's /datasets and the OpenAI-compatible /v1/files):
// reading uploaded files in every accepted format, storing uploads, processing them into chat splits, model-hub
// datasets, deleting a dataset or an upload (and what still needs it), and the presenters of dataset rows.
export {
  discardUpload, parseDelimiterField, receiveUploadPart, recordUpload, storeUpload, storeUploadPart, type ReceivedUpload, type UploadOptions, type UploadPart,
} from './uploads.ts';
export {
  beginProcessing, checkLlmSettings, needsWorker, processDataset, runProcessing, writeProcessedDataset, type ProcessingProgress, type SplitRecords,
} from './processing/process-dataset.ts';
export { deleteDataset, findOwnDataset, type OwnDataset } from './deletion.ts';
export { addUploadPart, cancelUpload, completeUpload, createUpload, partLimit, type NewUpload } from './upload-parts.ts';
export { datasetSource, uploadSource, type DatasetSource } from './processing/sources.ts';
export { PendingCalls, readToolCalls, readTools, type ToolCall, type ToolDefinition } from './processing/tool-calls.ts';
export { LlmClient, LlmUnavailable, type LlmSettings } from './augmentation/llm.ts';
export { presentDatasetSummary, presentProcessedDataset, presentProcessingResult, presentUpload, presentUploadList } from './presenters.ts';
export { byteSourceFromBlob } from './readers/byte-source.ts';
export { LineTooLong, numberedLines } from './readers/lines.ts';
export { lonelySurrogateAt, MAX_ROW_BYTES } from './readers/rows.ts';
export { processedPrefix, rawUploadKey } from './storage-keys.ts';
