// Request and response samples built from the tables of interface.md (shown values as given),
// plus `edit` for deriving invalid variants of them.

export const processRequest = {
  dataset_name: 'support-chats',
  dataset_id: 'ds_01',
  dataset_subset: 'default',
  config: {
    field_mappings: {
      system_field: { type: 'template', value: 'You answer questions about {product}.' },
      user_field: { type: 'column', value: 'question' },
      assistant_field: { type: 'column', value: 'answer' },
    },
    normalize_whitespace: true,
    augmentation_config: {
      augmentation_factor: 1.5,
      use_eda: false,
      use_back_translation: false,
      use_paraphrasing: false,
      use_synthesis: false,
      llm_api_key: null,
      synthesis_ratio: null,
      custom_prompt: null,
    },
    split_config: { type: 'no_split', sample_size: null, split: null },
  },
};

export const splitConfigs = [
  { type: 'hub_split', train_split: 'train', test_split: 'test' },
  { type: 'manual_split', sample_size: 1000, test_size: 0.2, split: 'train' },
  { type: 'manual_split', sample_size: null, test_size: 50, split: null },
  { type: 'manual_split' },
  { type: 'no_split', sample_size: 500, split: 'train' },
  { type: 'no_split' },
];

export const hyperparameters = {
  learning_rate: 0.0002,
  batch_size: 2,
  gradient_accumulation_steps: 4,
  epochs: 3,
  max_steps: -1,
  packing: false,
  padding_free: false,
  use_fast_attention: false,
  max_length: 1024,
  lr_scheduler_type: 'linear',
  save_strategy: 'epoch',
  logging_steps: 10,
  lora_rank: 16,
  lora_alpha: 16,
  lora_dropout: 0.05,
  max_prompt_length: 512,
  num_generations: 4,
  max_grad_norm: 0.1,
  adam_beta1: 0.9,
  adam_beta2: 0.99,
  warmup_ratio: 0.1,
  beta: 0.1,
};

export const trainRequest = {
  processed_dataset_id: 'pd_01',
  hub_token: 'hf_secret',
  job_name: 'unnamed job',
  training_config: {
    base_model_id: 'google/gemma-3-270m',
    provider: 'hub',
    method: 'QLoRA',
    trainer_type: 'sft',
    modality: 'text',
    hyperparameters,
    export_config: { format: 'adapter', destination: 'cloud', include_gguf: false },
    eval_config: { eval_strategy: 'no', eval_steps: 50, compute_eval_metrics: false, batch_eval_metrics: false },
    tracker_config: { api_key: 'tracker_secret', project: 'demo', log_model: 'end' },
    reward_config: [{ name: 'exact', reference_field: 'answer', type: 'string_check' }],
  },
};

export const grpoRewards = [
  { type: 'string_check', name: 'exact', reference_field: 'answer', operation: 'ilike' },
  { type: 'text_similarity', name: 'similar', reference_field: 'answer', evaluation_metric: 'rouge_l' },
  { type: 'built_in', name: 'format', function_name: 'format_reward' },
  { type: 'score_model', name: 'judge', model: 'gpt-4o-mini', prompt: 'Score {completion} against {answer}', range: [0, 10] },
  { type: 'label_model', name: 'polite', model: 'gpt-4o-mini', prompt: 'Is {completion} polite?', labels: ['polite', 'rude'], passing_labels: ['polite'] },
];

export const exportRequest = {
  job_id: 'job_01',
  destination: ['cloud'],
  hub_token: 'hf_secret',
  hub_repo_id: 'alice/gemma-support',
};

export const evaluationRequest = {
  hub_token: 'hf_secret',
  model_source: 'adapter',
  job_id: 'job_01',
  base_model_id: 'google/gemma-3-270m',
  dataset_id: 'pd_01',
  metrics: ['rouge', 'bertscore', 'accuracy', 'exact_match', 'bleu', 'meteor', 'recall', 'precision', 'f1'],
  max_samples: 100,
  num_sample_results: 3,
  use_fast_engine: false,
};

export const batchRequest = {
  hub_token: 'hf_secret',
  model_source: 'adapter',
  job_id: 'job_01',
  base_model_id: 'google/gemma-3-270m',
  messages: [
    [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What is LoRA?' },
    ],
    [
      {
        role: 'user',
        content: [
          { type: 'image', image: 'file:///data/blobs/images/cat.png' },
          { type: 'text', text: 'What animal is this?' },
        ],
      },
    ],
  ],
  use_fast_engine: false,
};

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
};

export const responses = {
  upload: { dataset_id: 'ds_01', filename: 'chats.csv', cloud_path: 'file:///data/blobs/raw/ds_01/chats.csv', size_bytes: 2048, sample: [{ question: 'q', answer: 'a' }], columns: ['question', 'answer'], num_examples: 100 },
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
