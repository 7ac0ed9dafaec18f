// The resources the console shows, typed from the same zod schemas the services validate against (types only:
// nothing of @ftp/schema is bundled).
export type {
  BenchmarkResults,
  CheckpointList,
  Comparison,
  ComparisonList,
  DatasetDeleteResult,
  DatasetList,
  DatasetSummary,
  Evaluation,
  EvaluationList,
  EvaluationResult,
  EvaluationStatus,
  ExportCreateResult,
  ExportDetails,
  ExportList,
  ExportRecord,
  ExportSummary,
  FieldMapping,
  FieldMappings,
  JobDeleteResult,
  JobList,
  ModelSource,
  PreflightReport,
  ProcessedDataset,
  ProcessingMode,
  ProcessingResult,
  SplitConfig,
  Sweep,
  SweepDimension,
  SweepList,
  SweepTrial,
  TrainingJob,
  UploadList,
  UploadResult,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookEndpointTestResult,
  WebhookEndpointWithSecret,
  WebhookEventTypeList,
  WorkerList,
} from '@ftp/schema';

/** A message of a conversation as the services write it: text, or text and image parts. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string | Array<{ type: 'text'; text: string } | { type: 'image'; image: string }>;
}
