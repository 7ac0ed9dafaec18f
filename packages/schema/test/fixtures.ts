// Request and response samples built from the tables of interface.md (shown values as given),
// plus `edit` for deriving invalid variants of them.

export { batchRequest, evaluationRequest, exportRequest, hyperparameters, processRequest, trainRequest } from '../src/examples.ts';

export const splitConfigs = [
  { type: 'hub_split', train_split: 'train', test_split: 'test' },
  { type: 'manual_split', sample_size: 1000, test_size: 0.2, split: 'train' },
  { type: 'manual_split', sample_size: null, test_size: 50, split: null },
  { type: 'manual_split' },
  { type: 'no_split', sample_size: 500, split: 'train' },
  { type: 'no_split' },
];

export const grpoRewards = [
  { type: 'string_check', name: 'exact', reference_field: 'answer', operation: 'ilike' },
  { type: 'text_similarity', name: 'similar', reference_field: 'answer', evaluation_metric: 'rouge_l', weight: 0.5 },
  { type: 'built_in', name: 'format', function_name: 'format_reward' },
  { type: 'score_model', name: 'judge', model: 'gpt-4o-mini', prompt: 'Score {completion} against {answer}', range: [0, 10] },
  { type: 'label_model', name: 'polite', model: 'gpt-4o-mini', prompt: 'Is {completion} polite?', labels: ['polite', 'rude'], passing_labels: ['polite'] },
];

const now = '2025-01-02T03:04:05.000Z';
const artifacts = {
  file: { adapter: 'file:///data/blobs/jobs/job_01/adapter.zip', merged: null, gguf: null },
  raw: { adapter: 'file:///data/blobs/jobs/job_01/adapter/' },
  hub: {},
};
const latestExport = {
  export_id: 'exp_01',
  job_id: 'job_01',
  type: 'adapter',
  status: 'running',
  started_at: now,
  destination: ['cloud'],
  hub_repo_id: 'alice/gemma-support',
  message: 'exporting adapter',
  artifacts: [{ type: 'adapter', path: 'file:///data/blobs/jobs/job_01/adapter/', variant: 'raw' }],
  finished_at: now,
  updated_at: now,
};
const split = { split_name: 'train', num_rows: 90, path: 'file:///data/blobs/processed/pd_01/train.jsonl', samples: [{ messages: [{ role: 'user', content: 'hi' }] }] };
const datasetFields = {
  dataset_name: 'support-chats',
  dataset_subset: 'default',
  dataset_source: 'upload',
  modality: 'text',
  dataset_id: 'ds_01',
  processed_dataset_id: 'pd_01',
  created_at: now,
  status: 'ready',
};

export const responses = {
  upload: { dataset_id: 'ds_01', filename: 'chats.csv', cloud_path: 'file:///data/blobs/raw/ds_01/chats.csv', size_bytes: 2048, sample: [{ question: 'q', answer: 'a' }], columns: ['question', 'answer'], num_examples: 100, delimiter: ',', warnings: [] },
  processedDataset: { ...datasetFields, splits: [split] },
  datasetSummary: { ...datasetFields, num_examples: 100, splits: ['train', 'test'] },
  processingResult: { ...datasetFields, num_examples: 100, splits: ['train'], full_splits: [split] },
  datasetDelete: { dataset_name: 'support-chats', deleted: true, message: 'deleted', deleted_files_count: 2, deleted_resources: null },
  trainingJob: {
    job_id: 'job_01',
    job_name: 'unnamed job',
    status: 'completed',
    modality: 'text',
    tracker_url: 'http://127.0.0.1:8002/jobs/job_01/dashboard',
    processed_dataset_id: 'pd_01',
    adapter_path: 'file:///data/blobs/jobs/job_01/adapter/',
    base_model_id: 'google/gemma-3-270m',
    gguf_path: null,
    metrics: { accuracy: 0.61, perplexity: 4.2, eval_loss: 1.43, eval_runtime: 3.5 },
    error: null,
    created_at: now,
    updated_at: now,
    progress: { step: 30, total_steps: 30, epoch: 3, loss: 1.2, eta_seconds: 0 },
    artifacts,
    latest_export: latestExport,
    training_config: { base_model_id: 'google/gemma-3-270m', method: 'LoRA', hyperparameters: { learning_rate: 0.0002 } },
    pruned: false,
  },
  jobDelete: { job_id: 'job_01', deleted: true, message: 'deleted', deleted_resources: ['jobs/job_01'] },
  exportCreate: { success: true, message: 'export started', export_id: 'exp_01' },
  exportDetails: { job_id: 'job_01', job_name: 'unnamed job', user_id: 'local', adapter_path: 'file:///a/', base_model_id: 'google/gemma-3-270m', modality: 'text', artifacts, latest_export: latestExport },
  evaluation: {
    metrics: { rouge: { rouge1: 0.4, rougeL: 0.38 }, bleu: 0.21 },
    num_samples: 10,
    dataset_id: 'pd_01',
    samples: [{ prediction: 'p', reference: 'r', sample_index: 0, input: [{ role: 'user', content: 'q' }] }],
    warnings: ['no test split; the train split was used', { metric: 'meteor', error: 'WordNet data is not installed' }],
  },
  batch: { results: ['LoRA trains small low-rank matrices.', 'A cat.'] },
  health: { status: 'ok', service: 'preprocessing', version: '2.0.0', checks: { db: 'ok', storage: 'ok', queue: 'unused' } },
};

/** A deep copy of `value` with the field at `path` set, or removed when `replacement` is undefined. */
export function edit<T>(value: T, path: ReadonlyArray<string | number>, replacement?: unknown): T {
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path[path.length - 1] as string | number;
  if (replacement === undefined) delete node[last];
  else node[last] = replacement;
  return copy as T;
}
