// The request samples of interface.md (its shown values, as given), one per request body. The tests check each
// validates; the OpenAPI documents carry them as `examples` (what schemathesis' examples phase sends first).

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
