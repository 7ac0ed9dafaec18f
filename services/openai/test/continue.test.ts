// A /v1 fine-tuning job whose model is a fine-tuned model or one of its checkpoints (ft:…) continues it, as OpenAI's
// does: the job trains on that model's base from its adapter (training_config.from_job, and from_checkpoint_step for
// a checkpoint) and shows the model it was asked for; an unknown or another user's ft model is a 404 model_not_found.
// No worker: what is checked is answered before anything runs, and the parent is a completed job's row.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { newId, type TrainingJobRow } from '@ftp/platform';
import type { TestPlatform } from '@ftp/platform/testing';
import { checkpointModelName, fineTunedModelName } from '@ftp/jobs/models';
import { tinyModelsDir, TINY_MODEL } from '../../../test/support/tiny-model.ts';
import { openAiTestApp, uploadFineTuneFile, type OpenAiTestApp } from './support.ts';

let opened: OpenAiTestApp;
let platform: TestPlatform;
let app: FastifyInstance;
let parent: TrainingJobRow;
let fileId: string;

beforeAll(async () => {
  opened = await openAiTestApp(await tinyModelsDir());
  ({ platform, app } = opened);
  const jobId = newId('job');
  await platform.jobs.insert({
    job_id: jobId, user_id: 'local', job_name: 'parent', processed_dataset_id: 'pd_x', base_model_id: TINY_MODEL, modality: 'text',
    training_config: { method: 'LoRA', provider: 'local', base_model_id: TINY_MODEL }, blob_prefix: `jobs/local/${jobId}/`, tracker_url: null,
  });
  const adapter = platform.blobs.uri(`jobs/local/${jobId}/adapter`);
  parent = (await platform.jobs.update(jobId, { status: 'completed', adapter_path: adapter, artifacts: { file: {}, raw: { adapter }, hub: {} } }))!;
  await platform.jobs.recordCheckpoint({ job_id: jobId, step: 4, epoch: 1, train_loss: 1, eval_loss: null, size_bytes: 10 });
  const line = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] });
  fileId = (await uploadFineTuneFile(app, 'train.jsonl', `${line}\n${line}\n`)).json().id;
}, 180_000);
afterAll(() => opened?.close());

const create = (model: string) => app.inject({ method: 'POST', url: '/v1/fine_tuning/jobs', payload: { model, training_file: fileId } });

describe('a fine-tuning job on a fine-tuned model', () => {
  it('continues the model, or the checkpoint, it names: same base, from its adapter', async () => {
    for (const [model, step] of [[fineTunedModelName(parent), undefined], [checkpointModelName(parent, 4), 4]] as const) {
      const res = await create(model);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ model, status: 'queued' });
      const job = (await platform.jobs.getForWorker(res.json().id))!;
      expect(job.base_model_id).toBe(TINY_MODEL);
      expect(job.training_config).toMatchObject({ base_model_id: TINY_MODEL, from_job: parent.job_id, ...(step !== undefined ? { from_checkpoint_step: step } : {}) });
      expect(job.parent_job_id).toBe(parent.job_id);
    }
  });

  it('is a 404 model_not_found for an ft model that is not the caller’s, or a checkpoint it does not have', async () => {
    const unknown = await create(`ft:${TINY_MODEL}:custom:job_0123456789abcdef01234567`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toMatchObject({ type: 'invalid_request_error', code: 'model_not_found' });
    const noCheckpoint = await create(checkpointModelName(parent, 5));
    expect(noCheckpoint.statusCode).toBe(404);
    expect(noCheckpoint.json().error.code).toBe('model_not_found');
  });
});
