// Checkpoint permissions (OpenAI's fine_tuning.checkpoints.permissions) with both official SDKs against a real app in
// token mode with three users: alice shares one stored checkpoint of her job with bob. Bob may then chat with it and
// fine-tune from it by its name (no worker here: his chat passes the model check and waits for a worker, a 503, where
// carol's is a 404 model_not_found; his job is queued from alice's checkpoint); nothing else of alice's job is his;
// once alice deletes the permission bob gets the 404 again. Only alice sees or manages the permissions.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { newId, type TrainingJobRow } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { DEFAULT_CORE_PYTHON } from '@ftp/core-client';
import { checkpointModelName, fineTunedModelName } from '@ftp/jobs/models';
import { tinyModelsDir, TINY_MODEL } from './support/tiny-model.ts';
import { buildOpenAiApp } from '@ftp/openai';

let platform: TestPlatform;
let app: FastifyInstance;
let job: TrainingJobRow;
let checkpoint: string;
const clients: Record<'alice' | 'bob' | 'carol', OpenAI> = {} as never;
const keys: Record<string, string> = {};

beforeAll(async () => {
  platform = await openTestPlatform({ MODELS_DIR: await tinyModelsDir(), AUTH_MODE: 'token' });
  app = await buildOpenAiApp(platform);
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  for (const user of ['alice', 'bob', 'carol'] as const) {
    keys[user] = (await platform.apiKeys.create(user, user)).key;
    // The npm SDK sends checkpoint permission calls with its admin key (OpenAI's are admin calls): the same key here.
    clients[user] = new OpenAI({ baseURL: `${address}/v1`, apiKey: keys[user], adminAPIKey: keys[user], maxRetries: 0 });
  }
  const jobId = newId('job');
  await platform.jobs.insert({
    job_id: jobId, user_id: 'alice', job_name: 'shared', processed_dataset_id: 'pd_x', base_model_id: TINY_MODEL, modality: 'text',
    training_config: { method: 'LoRA', provider: 'local', base_model_id: TINY_MODEL }, blob_prefix: `jobs/alice/${jobId}/`, tracker_url: null,
  });
  const adapter = platform.blobs.uri(`jobs/alice/${jobId}/adapter`);
  job = (await platform.jobs.update(jobId, { status: 'completed', adapter_path: adapter, artifacts: { file: {}, raw: { adapter }, hub: {} } }))!;
  for (const step of [4, 8]) await platform.jobs.recordCheckpoint({ job_id: jobId, step, epoch: 1, train_loss: 1, eval_loss: null, size_bytes: 10 });
  checkpoint = checkpointModelName(job, 4);
}, 120_000);
afterAll(async () => {
  await app?.close();
  await platform?.close();
});

const chat = (who: OpenAI, model: string) => who.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
async function trainingFile(who: OpenAI): Promise<string> {
  const line = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] });
  return (await who.files.create({ file: new File([`${line}\n${line}\n`], 'train.jsonl'), purpose: 'fine-tune' })).id;
}

describe('a checkpoint shared (npm SDK)', () => {
  it('lets the users named chat with it and fine-tune from it, and nothing else of the job; deleting the permission takes it back', async () => {
    const notFound = { status: 404, code: 'model_not_found' };
    await expect(chat(clients.bob, checkpoint)).rejects.toMatchObject(notFound);

    const granted = await clients.alice.fineTuning.checkpoints.permissions.create(checkpoint, { project_ids: ['bob', 'bob'] });
    expect(granted.data).toEqual([{ id: expect.stringMatching(/^cp_/), object: 'checkpoint.permission', created_at: expect.any(Number), project_id: 'bob' }]);
    const permission = granted.data[0]!;
    // Granting again returns the same permission.
    expect((await clients.alice.fineTuning.checkpoints.permissions.create(checkpoint, { project_ids: ['bob'] })).data[0]!.id).toBe(permission.id);

    // Bob's chat passes the model check (no worker serves it here: a 503, not a 404); carol's does not.
    await expect(chat(clients.bob, checkpoint)).rejects.toMatchObject({ status: 503 });
    await expect(chat(clients.carol, checkpoint)).rejects.toMatchObject(notFound);
    // Only that checkpoint: not another checkpoint of the job, not its final model, not its record.
    await expect(chat(clients.bob, checkpointModelName(job, 8))).rejects.toMatchObject(notFound);
    await expect(chat(clients.bob, fineTunedModelName(job))).rejects.toMatchObject(notFound);
    await expect(clients.bob.fineTuning.jobs.retrieve(job.job_id)).rejects.toMatchObject({ status: 404 });

    // Bob fine-tunes from it: his job goes on from alice's checkpoint.
    const bobsJob = await clients.bob.fineTuning.jobs.create({ model: checkpoint, training_file: await trainingFile(clients.bob) });
    expect(bobsJob).toMatchObject({ status: 'queued', model: checkpoint });
    expect((await platform.jobs.getForWorker(bobsJob.id))!).toMatchObject({ user_id: 'bob', parent_job_id: job.job_id, training_config: { from_job: job.job_id, from_checkpoint_step: 4 } });
    await expect(clients.carol.fineTuning.jobs.create({ model: checkpoint, training_file: await trainingFile(clients.carol) })).rejects.toMatchObject(notFound);

    // Only alice sees and manages the permissions.
    const listed = await clients.alice.fineTuning.checkpoints.permissions.retrieve(checkpoint);
    expect(listed).toMatchObject({ object: 'list', data: [permission], has_more: false });
    expect((await clients.alice.fineTuning.checkpoints.permissions.retrieve(checkpoint, { project_id: 'carol' })).data).toEqual([]);
    await expect(clients.bob.fineTuning.checkpoints.permissions.retrieve(checkpoint)).rejects.toMatchObject({ status: 404 });
    await expect(clients.bob.fineTuning.checkpoints.permissions.create(checkpoint, { project_ids: ['carol'] })).rejects.toMatchObject({ status: 404 });
    await expect(clients.bob.fineTuning.checkpoints.permissions.delete(permission.id, { fine_tuned_model_checkpoint: checkpoint })).rejects.toMatchObject({ status: 404 });

    expect(await clients.alice.fineTuning.checkpoints.permissions.delete(permission.id, { fine_tuned_model_checkpoint: checkpoint }))
      .toEqual({ id: permission.id, object: 'checkpoint.permission', deleted: true });
    await expect(chat(clients.bob, checkpoint)).rejects.toMatchObject(notFound);
    await expect(clients.alice.fineTuning.checkpoints.permissions.delete(permission.id, { fine_tuned_model_checkpoint: checkpoint })).rejects.toMatchObject({ status: 404 });
  });

  it('is a 404 for a name that is no stored checkpoint of the caller’s', async () => {
    for (const name of [fineTunedModelName(job), checkpointModelName(job, 5), TINY_MODEL]) {
      await expect(clients.alice.fineTuning.checkpoints.permissions.create(name, { project_ids: ['bob'] })).rejects.toMatchObject({ status: 404 });
    }
  });
});

describe('checkpoint permissions (Python SDK)', () => {
  it('are created, read and deleted through client.fine_tuning.checkpoints.permissions', async () => {
    const script = [
      'import json, sys',
      'from openai import OpenAI',
      'client = OpenAI()',
      'created = list(client.fine_tuning.checkpoints.permissions.create(sys.argv[1], project_ids=["carol"]))',
      'listed = client.fine_tuning.checkpoints.permissions.retrieve(sys.argv[1], project_id="carol")',
      'deleted = client.fine_tuning.checkpoints.permissions.delete(created[0].id, fine_tuned_model_checkpoint=sys.argv[1])',
      'print(json.dumps({"created": [p.project_id for p in created], "listed": [p.id for p in listed.data] == [created[0].id], "deleted": deleted.deleted}))',
    ].join('\n');
    const { stdout } = await promisify(execFile)(process.env.CORE_PYTHON ?? DEFAULT_CORE_PYTHON, ['-c', script, checkpoint], {
      env: { ...process.env, OPENAI_BASE_URL: clients.alice.baseURL, OPENAI_API_KEY: keys.alice },
    });
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toEqual({ created: ['carol'], listed: true, deleted: true });
  }, 60_000);
});
