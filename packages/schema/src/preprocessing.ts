// Preprocessing service schemas: uploads, the process request (field mappings, augmentation, splits)
// and the processed-dataset resources (interface.md 2.1-2.9, decisions.md "Preprocessing").
import { z } from 'zod';
import { boundedInt, DatasetSource, documentedRules, Identifier, Modality, Secret, Timestamp, maybe } from './common.ts';
import { processRequest } from './examples.ts';

export const ProcessingMode = z
  .enum(['language_modeling', 'prompt_only', 'preference'])
  .describe('language_modeling: messages for sft; prompt_only: prompts for grpo; preference: chosen/rejected for dpo and orpo')
  .meta({ id: 'ProcessingMode' });
export type ProcessingMode = z.infer<typeof ProcessingMode>;

export const FieldMapping = z
  .strictObject({
    type: z.enum(['column', 'template', 'image']).describe('column: copy a column; template: fill {column} references; image: a column holding an image'),
    value: z.string().min(1).describe('Column name, or a template such as "Question: {question}"'),
  })
  .meta({ id: 'FieldMapping', description: 'Where one message’s text (or image) comes from' });
export type FieldMapping = z.infer<typeof FieldMapping>;

export const FieldMappings = z
  .strictObject({
    system_field: FieldMapping.optional(),
    user_field: z
      .union([FieldMapping, z.array(FieldMapping).min(1)])
      .optional()
      .describe('One mapping, or several (text and image parts of one user message)'),
    assistant_field: FieldMapping.optional(),
    chosen_field: FieldMapping.optional().describe('preference mode: the preferred answer'),
    rejected_field: FieldMapping.optional().describe('preference mode: the rejected answer'),
    tools_field: FieldMapping.optional().describe(
      'language_modeling: a column (type column) holding a JSON array of OpenAI tool definitions ({"type": "function", "function": {name, description, parameters}}), kept on each record as tools for the model’s chat template',
    ),
  })
  .describe('Target message field → source mapping; which keys are required depends on processing_mode');
export type FieldMappings = z.infer<typeof FieldMappings>;

/** Mapping keys each processing mode cannot do without. */
export const REQUIRED_FIELD_MAPPINGS: Record<ProcessingMode, ReadonlyArray<keyof FieldMappings>> = {
  language_modeling: ['user_field', 'assistant_field'],
  prompt_only: ['user_field'],
  preference: ['user_field', 'chosen_field', 'rejected_field'],
};

export const AugmentationConfig = z
  .strictObject({
    augmentation_factor: z
      .number()
      .min(1)
      .default(1.5)
      .describe('The train split grows to about factor × rows; originals are kept once'),
    use_eda: z.boolean().nullable().default(false).describe('Synonym replacement, random insertion, swap and deletion'),
    use_back_translation: z.boolean().nullable().default(false).describe('Needs LLM_API_BASE'),
    use_paraphrasing: z.boolean().nullable().default(false).describe('Needs LLM_API_BASE'),
    use_synthesis: z.boolean().nullable().default(false).describe('New conversations from custom_prompt; needs LLM_API_BASE'),
    llm_api_key: maybe(Secret).describe('Credential for the language-model service at LLM_API_BASE; never stored'),
    synthesis_ratio: maybe(z.number().positive()).describe('Synthesised conversations as a fraction of the rows'),
    custom_prompt: maybe(z.string().min(1)).describe('Instruction the synthesiser follows'),
  })
  .meta({ id: 'AugmentationConfig', description: 'Augmentation of the train split (never the test split)' });
export type AugmentationConfig = z.infer<typeof AugmentationConfig>;

const SampleSize = maybe(boundedInt(1)).describe('Take a seeded random sample of this many rows first');
const SourceSplit = maybe(z.string().min(1)).describe('Source split to read; default the first one (usually train)');

export const HubSplit = z.strictObject({
  type: z.literal('hub_split'),
  train_split: z.string().min(1).describe('Source split that becomes train'),
  test_split: z.string().min(1).describe('Source split that becomes test'),
});
export const ManualSplit = z.strictObject({
  type: z.literal('manual_split'),
  sample_size: SampleSize,
  test_size: z
    .number()
    .positive()
    .refine((size) => size < 1 || Number.isInteger(size), {
      message: 'test_size of 1 or more is a row count and must be a whole number; use 0 < test_size < 1 for a fraction',
    })
    .nullable()
    .default(0.1)
    .describe('Fraction (0 < x < 1) or row count (≥ 1) of the test split')
    .meta({ anyOf: [{ type: 'null' }, { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 }, { type: 'integer', minimum: 1 }] }),
  split: SourceSplit,
});
export const NoSplit = z.strictObject({
  type: z.literal('no_split'),
  sample_size: SampleSize,
  split: SourceSplit,
});
export const SplitConfig = z
  .discriminatedUnion('type', [HubSplit, ManualSplit, NoSplit])
  .meta({ id: 'SplitConfig', description: 'How train/test splits are made; rows are shuffled with seed 42' });
export type SplitConfig = z.infer<typeof SplitConfig>;

export const PreprocessingConfig = z
  .strictObject({
    field_mappings: FieldMappings,
    normalize_whitespace: z.boolean().default(true).describe('Trim, collapse runs of spaces and tabs, keep single newlines'),
    augmentation_config: AugmentationConfig.optional().describe('Absent: no augmentation'),
    split_config: SplitConfig.default({ type: 'no_split' }),
  })
  .meta({ id: 'PreprocessingConfig' });
export type PreprocessingConfig = z.infer<typeof PreprocessingConfig>;

/** A hub repository id: an optional owner and a name, each 1–96 of [A-Za-z0-9_.-] not starting with '.', and no '..'
 *  anywhere (both pieces stated in the OpenAPI document; resolveHubDataset checks them). */
export const HUB_REPO_ID_PATTERN = '^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]{0,95}/)?[A-Za-z0-9_-][A-Za-z0-9_.-]{0,95}$';
export const HUB_REPO_ID_FORBIDDEN = '\\.\\.';

export const ProcessDatasetRequest = z
  .strictObject({
    dataset_name: z.string().min(1).max(200).describe('Name for the processed dataset'),
    dataset_id: Identifier.describe('An upload’s dataset_id, or a hub dataset repo id (owner/name)'),
    dataset_source: DatasetSource.default('upload'),
    dataset_subset: z.string().min(1).default('default').describe('Hub dataset configuration name'),
    processing_mode: ProcessingMode.default('language_modeling'),
    config: PreprocessingConfig,
  })
  .superRefine((request, ctx) => {
    for (const key of REQUIRED_FIELD_MAPPINGS[request.processing_mode]) {
      if (request.config.field_mappings[key] === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['config', 'field_mappings', key],
          message: `${key} is required for processing_mode ${request.processing_mode}`,
          params: { type: 'missing' },
        });
      }
    }
  })
  .meta({
    id: 'ProcessDatasetRequest',
    description: 'Convert an uploaded or hub dataset to ChatML',
    examples: [processRequest],
    ...documentedRules(
      {
        when: { required: ['dataset_source'], properties: { dataset_source: { const: 'hub' } } },
        then: { properties: { dataset_id: { pattern: HUB_REPO_ID_PATTERN, not: { pattern: HUB_REPO_ID_FORBIDDEN } } } },
      },
      ...Object.entries(REQUIRED_FIELD_MAPPINGS).map(([mode, keys]) => ({
        when: { properties: { processing_mode: { const: mode } }, ...(mode === 'language_modeling' ? {} : { required: ['processing_mode'] }) },
        then: { required: ['config'], properties: { config: { required: ['field_mappings'], properties: { field_mappings: { required: keys } } } } },
      })),
    ),
  });
export type ProcessDatasetRequest = z.infer<typeof ProcessDatasetRequest>;

// ---------------------------------------------------------------------------------------------
// Responses

/** The field delimiters of delimited text (CSV, TSV and their semicolon and pipe cousins). */
export const DELIMITERS = [',', ';', '\t', '|'] as const;
export const Delimiter = z
  .enum(DELIMITERS)
  .describe('Comma, semicolon, tab or pipe')
  .meta({ id: 'Delimiter' });
export type Delimiter = z.infer<typeof Delimiter>;

export const UploadResult = z
  .object({
    dataset_id: Identifier.describe('Use as dataset_id in POST /datasets/process'),
    filename: z.string(),
    cloud_path: z.string().describe('Blob URI of the file as uploaded'),
    size_bytes: z.number().int().nonnegative(),
    sample: z.array(z.record(z.string(), z.unknown())).describe('The first 5 rows'),
    columns: z.array(z.string()).describe('Union of the row keys, in file order'),
    num_examples: z.number().int().nonnegative().describe('Exact row count'),
    delimiter: Delimiter.nullable().describe(
      'The delimiter the file was read with: the multipart field `delimiter` when sent, else detected from the content; null for JSON, JSONL and Parquet',
    ),
    warnings: z
      .array(z.string())
      .describe('What may have been read otherwise than meant, each a sentence saying what to do (e.g. one column whose rows hold a delimiter); empty when nothing'),
  })
  .meta({ id: 'UploadResult' });
export type UploadResult = z.infer<typeof UploadResult>;

export const UploadList = z
  .object({
    uploads: z
      .array(UploadResult.extend({ created_at: Timestamp }).meta({ id: 'UploadSummary' }))
      .describe('The caller’s uploaded files, newest first, processed or not'),
  })
  .meta({ id: 'UploadList' });
export type UploadList = z.infer<typeof UploadList>;

const ProcessedRecord = z
  .record(z.string(), z.unknown())
  .describe('language_modeling {messages}; prompt_only {prompt, …source columns}; preference {prompt, chosen, rejected}');

export const SplitInfo = z
  .object({
    split_name: z.string().describe('train or test (or the hub split name)'),
    num_rows: z.number().int().nonnegative(),
    path: z.string().describe('Blob URI of the split’s JSONL file'),
    samples: z.array(ProcessedRecord).describe('The first 5 processed records'),
  })
  .meta({ id: 'SplitInfo' });
export type SplitInfo = z.infer<typeof SplitInfo>;

export const AugmentationCounts = z
  .partialRecord(
    z.enum(['eda', 'back_translation', 'paraphrasing', 'synthesis']),
    z.object({
      added: z.number().int().nonnegative().describe('New train rows this method made'),
      dropped: z.number().int().nonnegative().describe('Rows it could not make (no word to change, a bad generation)'),
    }),
  )
  .meta({
    id: 'AugmentationCounts',
    description: 'Per augmentation method, what it did to the train split; new records carry metadata.augmented (the method) and metadata.source_index',
  });
export type AugmentationCounts = z.infer<typeof AugmentationCounts>;

export const DatasetStatus = z
  .enum(['ready', 'processing', 'failed'])
  .describe('ready: its splits can be trained on; processing: a worker is augmenting it with a language model; failed: see error');
export type DatasetStatus = z.infer<typeof DatasetStatus>;

export const DatasetProgress = z
  .object({
    done: z.number().int().nonnegative().describe('Source rows processed'),
    total: z.number().int().nonnegative().describe('Source rows to process'),
    by_method: z.record(z.string(), z.number().int().nonnegative()).describe('New rows made so far, per augmentation method'),
  })
  .meta({ id: 'DatasetProgress', description: 'How far a worker is with a processing dataset' });
export type DatasetProgress = z.infer<typeof DatasetProgress>;

const datasetFields = {
  dataset_name: z.string(),
  dataset_subset: z.string(),
  dataset_source: DatasetSource,
  modality: Modality,
  dataset_id: Identifier.describe('The source (raw) dataset'),
  processed_dataset_id: Identifier,
  processing_mode: ProcessingMode.optional(),
  created_at: Timestamp,
  augmentation: AugmentationCounts.optional().describe('Present when the train split was augmented'),
  status: DatasetStatus,
  progress: DatasetProgress.optional().describe('Present while (and after) a worker processed it'),
  error: z.string().optional().describe('Why processing failed (status failed)'),
};

export const ProcessedDataset = z
  .object({ ...datasetFields, splits: z.array(SplitInfo) })
  .meta({ id: 'ProcessedDataset' });
export type ProcessedDataset = z.infer<typeof ProcessedDataset>;

export const DatasetSummary = z
  .object({
    ...datasetFields,
    num_examples: z.number().int().nonnegative().describe('Rows over all splits'),
    splits: z.array(z.string()).describe('Split names'),
  })
  .meta({ id: 'DatasetSummary' });
export type DatasetSummary = z.infer<typeof DatasetSummary>;

export const DatasetList = z
  .object({ datasets: z.array(DatasetSummary).describe('The caller’s processed datasets') })
  .meta({ id: 'DatasetList' });
export type DatasetList = z.infer<typeof DatasetList>;

export const ProcessingResult = z
  .object({
    ...DatasetSummary.shape,
    full_splits: z.array(SplitInfo),
  })
  .meta({ id: 'ProcessingResult' });
export type ProcessingResult = z.infer<typeof ProcessingResult>;

export const DatasetDeleteResult = z
  .object({
    dataset_name: z.string(),
    deleted: z.boolean(),
    message: z.string(),
    deleted_files_count: z.number().int().nonnegative(),
    deleted_resources: maybe(z.array(z.string())).describe(
      'Every blob and row removed. Deleting a processed dataset never removes the upload it was made from; deleting an upload removes only the upload',
    ),
    kept_processed_datasets: z
      .array(z.string())
      .optional()
      .describe('Deleting an upload (ds_…): the processed datasets made from it, which keep their rows and files and can still be trained on'),
  })
  .meta({ id: 'DatasetDeleteResult' });
export type DatasetDeleteResult = z.infer<typeof DatasetDeleteResult>;

export const ProcessedDatasetParams = z.object({
  processed_dataset_id: Identifier.describe('From POST /datasets/process'),
});

export const DatasetDeleteParams = z.object({
  processed_dataset_id: Identifier.describe('A processed dataset (pd_…, from POST /datasets/process) or an upload (ds_…, the dataset_id of POST /datasets/upload)'),
});

export const DatasetDeleteQuery = z.object({
  cancel_jobs: z
    .enum(['true', 'false'])
    .default('false')
    .describe('true: cancel the training jobs and batches that still need the dataset, drop the evaluations waiting for it, and delete it; false: 409 naming them'),
});
export type DatasetDeleteQuery = z.infer<typeof DatasetDeleteQuery>;
