// Test support for the training service: preprocessing + training apps and a real worker on one temp
// platform (as the embedded stack runs them), the tiny model in MODELS_DIR, every response contract-checked.
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { buildPreprocessingApp } from '@ftp/preprocessing';
import { startWorker, type WorkerHandle } from '@ftp/worker';
import { buildTrainingApp } from '@ftp/training';
import { checkedInject } from '../contract/openapi-contract.ts';
import { multipartBody } from './preprocessing.ts';
import { tinyModelsDir } from './tiny-model.ts';

export interface TrainingHarness {
  platform: TestPlatform;
  preprocessing: FastifyInstance;
  training: FastifyInstance;
  worker?: WorkerHandle;
  train(options: InjectOptions): Promise<LightMyRequestResponse>;
  pre(options: InjectOptions): Promise<LightMyRequestResponse>;
  /** Uploads a CSV and processes it; returns the processed_dataset_id. */
  dataset(csv: string, body?: Record<string, unknown>, headers?: Record<string, string>): Promise<string>;
  waitFor(jobId: string, done: (job: Record<string, unknown>) => boolean, timeoutMs?: number, headers?: Record<string, string>): Promise<Record<string, unknown>>;
  /** Trains loraRequest on `dataset` (or `request`) and waits until the job has completed; returns its id. */
  trainedJob(dataset: string, headers?: Record<string, string>, request?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

export async function startTrainingHarness(env: Record<string, string> = {}, options: { worker?: boolean } = {}): Promise<TrainingHarness> {
  const platform = await openTestPlatform({ MODELS_DIR: await tinyModelsDir(), ...env });
  const preprocessing = await buildPreprocessingApp(platform);
  const training = await buildTrainingApp(platform);
  const worker = options.worker === false ? undefined : await startWorker(platform);
  const train = (o: InjectOptions) => checkedInject('training', training, o);
  const pre = (o: InjectOptions) => checkedInject('preprocessing', preprocessing, o);
  const waitFor: TrainingHarness['waitFor'] = async (jobId, done, timeoutMs = 180_000, headers = {}) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const job = (await train({ url: `/jobs/${jobId}`, headers })).json() as Record<string, unknown>;
      if (done(job)) return job;
      if (Date.now() > deadline) throw new Error(`job ${jobId} did not get there in time: ${JSON.stringify(job)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  return {
    platform,
    preprocessing,
    training,
    worker,
    train,
    pre,
    async dataset(csv, body = {}, headers = {}) {
      const { body: payload, contentType } = multipartBody('data.csv', csv);
      const upload = await pre({ method: 'POST', url: '/datasets/upload', payload, headers: { 'content-type': contentType, ...headers } });
      if (upload.statusCode !== 200) throw new Error(`upload failed: ${upload.body}`);
      const processed = await pre({
        method: 'POST',
        url: '/datasets/process',
        headers,
        payload: {
          dataset_name: 'train-test',
          dataset_id: upload.json().dataset_id,
          config: {
            field_mappings: { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } },
            split_config: { type: 'manual_split', test_size: 4 },
          },
          ...body,
        },
      });
      if (processed.statusCode !== 200) throw new Error(`process failed: ${processed.body}`);
      return processed.json().processed_dataset_id as string;
    },
    waitFor,
    async trainedJob(dataset, headers = {}, request = loraRequest(dataset)) {
      const submitted = await train({ method: 'POST', url: '/train', payload: request, headers });
      if (submitted.statusCode !== 200) throw new Error(`submit failed: ${submitted.body}`);
      const jobId = submitted.json().job_id as string;
      const job = await waitFor(jobId, (j) => j.status === 'completed' || j.status === 'failed', 240_000, headers);
      if (job.status !== 'completed') throw new Error(`job ${jobId} did not complete: ${JSON.stringify(job)}`);
      return jobId;
    },
    async close() {
      await worker?.stop();
      await preprocessing.close();
      await training.close();
      await platform.close();
    },
  };
}

/** A small memorisable question/answer set. */
export function qaCsv(rows = 24): string {
  const pairs = [
    ['What color is the sky?', 'Blue.'],
    ['What is two plus two?', 'Four.'],
    ['Name a fruit.', 'Apple.'],
    ['What do cows drink?', 'Water.'],
  ];
  const lines = ['question,answer'];
  for (let i = 0; i < rows; i++) lines.push(pairs[i % pairs.length]!.map((c) => `"${c}"`).join(','));
  return `${lines.join('\n')}\n`;
}

export function loraRequest(processedDatasetId: string, hyperparameters: Record<string, unknown> = {}, config: Record<string, unknown> = {}) {
  return {
    processed_dataset_id: processedDatasetId,
    job_name: 'tiny lora',
    training_config: {
      base_model_id: 'tiny',
      provider: 'local',
      method: 'LoRA',
      trainer_type: 'sft',
      hyperparameters: { max_steps: 30, logging_steps: 3, learning_rate: 0.01, batch_size: 4, gradient_accumulation_steps: 1, max_length: 64, save_strategy: 'no', ...hyperparameters },
      ...config,
    },
  };
}
