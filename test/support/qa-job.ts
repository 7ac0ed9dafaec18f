// The tiny model's question-answer job, as the pipeline test and the GPU check's recording (test/gpu-job-capture.test.ts) run it over HTTP:
// 24 rows of four pairs uploaded as CSV and processed with a test split of 4, then LoRA SFT that memorises them.
import type { ApiClient } from './http.ts';
import { until } from './http.ts';
import type { StackUrls } from './stack.ts';
import { TINY_MODEL } from './tiny-model.ts';

export const QA_PAIRS = [
  ['What color is the sky?', 'Blue.'],
  ['What is two plus two?', 'Four.'],
  ['Name a fruit.', 'Apple.'],
  ['What do cows drink?', 'Water.'],
] as const;

/** Uploads and processes the QA CSV: the upload's and the processing's answers. */
export async function uploadQaDataset(urls: StackUrls, ok: ApiClient['ok']): Promise<{ upload: any; processed: any }> {
  const csv = ['question,answer', ...Array.from({ length: 24 }, (_, i) => QA_PAIRS[i % 4]!.map((c) => `"${c}"`).join(','))].join('\n');
  const form = new FormData();
  form.append('file', new Blob([csv]), 'qa.csv');
  const upload = await ok(`${urls.preprocessing}/datasets/upload`, { method: 'POST', body: form });
  const processed = await ok(`${urls.preprocessing}/datasets/process`, {
    method: 'POST',
    json: {
      dataset_name: 'qa', dataset_id: upload.dataset_id,
      config: {
        field_mappings: { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } },
        split_config: { type: 'manual_split', test_size: 4 },
      },
    },
  });
  return { upload, processed };
}

/** Trains LoRA SFT of the tiny model on the processed dataset until it has memorised the answers; the ended job. */
export async function trainTinyQa(urls: StackUrls, ok: ApiClient['ok'], datasetId: string, jobName: string): Promise<any> {
  const { job_id: jobId } = await ok(`${urls.training}/train`, {
    method: 'POST',
    json: {
      processed_dataset_id: datasetId, job_name: jobName,
      training_config: {
        base_model_id: TINY_MODEL, provider: 'local', method: 'LoRA', trainer_type: 'sft',
        hyperparameters: { max_steps: 40, logging_steps: 5, learning_rate: 0.01, batch_size: 4, gradient_accumulation_steps: 1, max_length: 64, save_strategy: 'no' },
      },
    },
  });
  return until('training', () => ok(`${urls.training}/jobs/${jobId}`), (j) => j.status === 'completed' || j.status === 'failed');
}
