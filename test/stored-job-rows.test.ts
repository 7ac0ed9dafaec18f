// Job rows as a worker may leave them, served by both faces (GET /jobs and /jobs/{id}; /v1/fine_tuning/jobs and its
// retrieve) on both metadata stores (PGlite embedded, PostgreSQL scaled out). #56: a worker killed after step 50 of 50
// left step 51 of 50 with eta -0.1, and the serializer refused the whole list (a 500 for every GET /jobs). Rows are
// written through the repository's update, as the worker writes them: no training, no worker. #58: a stored
// training_config is parsed by one function (jobConfig); a row from before a field existed gets its default, and one
// that does not parse is left out of the lists like any row that cannot be served.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { newId, type TrainingJobRow } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { buildOpenAiApp } from '@ftp/openai';
import { buildTrainingApp } from '@ftp/training';
import { checkedInject } from './contract/openapi-contract.ts';
import { createDatabase } from './servers/scaled-env.ts';

const MODES: Array<[string, () => Promise<Record<string, string>>]> = [
  ['PGlite', async () => ({})],
  [
    'PostgreSQL',
    async () => ({
      DATABASE_URL: await createDatabase(inject('servers').postgresUrl, `ftp_rows_${randomBytes(4).toString('hex')}`),
      SECRETS_KEY: randomBytes(32).toString('base64'),
    }),
  ],
];

describe.each(MODES)('job rows a worker left, on %s', (_mode, environment) => {
  let platform: TestPlatform;
  let training: FastifyInstance;
  let openai: FastifyInstance;
  const user = 'local';
  const ids: Record<'soak' | 'nan' | 'inf' | 'past' | 'misfit' | 'unservable' | 'legacy' | 'badConfig', string> = {} as never;
  const get = (url: string) => checkedInject('training', training, { url });
  const v1 = (url: string) => checkedInject('openai', openai, { url });

  /** A job of `user`, then the updates a worker makes, through the repository. */
  async function job(update: Parameters<TestPlatform['jobs']['update']>[1], config: Record<string, unknown> = { trainer_type: 'sft', method: 'LoRA' }): Promise<TrainingJobRow> {
    const jobId = newId('job');
    await platform.jobs.insert({
      job_id: jobId, user_id: user, job_name: 'soak', processed_dataset_id: 'pd_rows', base_model_id: 'tiny', modality: 'text',
      training_config: config, blob_prefix: `jobs/${user}/${jobId}/`, tracker_url: null,
    });
    await platform.jobs.update(jobId, { status: 'preparing', started_at: new Date() }, ['queued']);
    return (await platform.jobs.update(jobId, { status: 'training', ...update }))!;
  }

  beforeAll(async () => {
    platform = await openTestPlatform(await environment());
    training = await buildTrainingApp(platform);
    openai = await buildOpenAiApp(platform);
    // the soak's row, exactly: re-queued from step 50 of 50, ran a step 51, completed
    ids.soak = (await job({ progress: { step: 51, total_steps: 50, epoch: 1.02, loss: 0.1, eta_seconds: -0.1 } })).job_id;
    await platform.jobs.update(ids.soak, { status: 'completed', finished_at: new Date() });
    ids.nan = (await job({ progress: { step: 10, total_steps: 50, epoch: 0.2, loss: Number.NaN, eta_seconds: 40 } })).job_id;
    ids.inf = (await job({ progress: { step: 10, total_steps: 50, epoch: 0.2, loss: Number.POSITIVE_INFINITY, eta_seconds: Number.POSITIVE_INFINITY } })).job_id;
    ids.past = (await job({ progress: { step: 70, total_steps: 50, epoch: 1.4, loss: 0.2, eta_seconds: 3 } })).job_id;
    // what no presenter repairs: an artifact path that is no string and a pre-flight report of another shape (nullable)
    ids.misfit = (await job({ artifacts: { file: { adapter: 5 as never }, raw: {}, hub: {} }, preflight: { from: 'an older version' } })).job_id;
    // what cannot be served at all: required fields missing or of another type (artifacts without `file`; /v1's model)
    ids.unservable = (await job({ artifacts: { raw: {}, hub: {} } as never, openai: { model: 5 } })).job_id;
    // a row written before trainer_type, method or any hyperparameter was stored; one whose config does not parse
    ids.legacy = (await job({ progress: { step: 1, total_steps: 5, epoch: 0.2, loss: 1, eta_seconds: 4 } }, {})).job_id;
    ids.badConfig = (await job({}, { hyperparameters: { batch_size: 'two' } })).job_id;
    await platform.jobs.recordCheckpoint({ job_id: ids.nan, step: 10, epoch: 0.2, train_loss: Number.NaN, eval_loss: Number.NEGATIVE_INFINITY, size_bytes: 1 });
  });
  afterAll(async () => {
    await training?.close();
    await openai?.close();
    await platform?.close();
  });

  it('stores what JSON can hold: a NaN or infinite figure in progress is null in the row; a checkpoint column keeps NaN', async () => {
    expect((await platform.jobs.get(user, ids.nan))!.progress).toMatchObject({ loss: null });
    expect((await platform.jobs.get(user, ids.inf))!.progress).toMatchObject({ loss: null, eta_seconds: null });
    const [checkpoint] = await platform.jobs.checkpoints(ids.nan);
    expect(checkpoint).toMatchObject({ train_loss: Number.NaN, eval_loss: Number.NEGATIVE_INFINITY });
  });

  it('lists and gets every job it can serve, each figure valid: no negative ETA, no step past the total, no NaN loss', async () => {
    const list = await get('/jobs');
    expect(list.statusCode).toBe(200);
    const jobs = new Map((list.json().jobs as Array<{ job_id: string; progress: Record<string, unknown> | null }>).map((j) => [j.job_id, j]));
    const expected = {
      soak: { step: 51, total_steps: 51, epoch: 1.02, loss: 0.1, eta_seconds: 0 },
      nan: { step: 10, total_steps: 50, loss: null, eta_seconds: 40 },
      inf: { step: 10, total_steps: 50, loss: null, eta_seconds: null },
      past: { step: 70, total_steps: 70, loss: 0.2, eta_seconds: 3 },
    };
    for (const [name, progress] of Object.entries(expected)) {
      const id = ids[name as keyof typeof expected];
      expect(jobs.get(id)?.progress, name).toMatchObject(progress);
      const one = await get(`/jobs/${id}`);
      expect(one.statusCode, name).toBe(200);
      expect(one.json().progress, name).toMatchObject(progress);
    }
    const checkpoints = await get(`/jobs/${ids.nan}/checkpoints`);
    expect(checkpoints.json().checkpoints).toMatchObject([{ step: 10, train_loss: null, eval_loss: null }]);
  });

  it('serves a field that does not fit as null, and logs the job', async () => {
    const one = await get(`/jobs/${ids.misfit}`);
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject({ artifacts: { file: { adapter: null } }, preflight: null });
    expect((await get('/jobs')).json().jobs.find((j: { job_id: string }) => j.job_id === ids.misfit)).toMatchObject({ preflight: null });
    expect(platform.logText()).toContain(ids.misfit);
  });

  it('leaves a row it cannot serve out of the list, logged by job id, and answers its own GET with a 500 and the request id', async () => {
    const list = await get('/jobs');
    expect(list.statusCode).toBe(200);
    const listed = list.json().jobs.map((j: { job_id: string }) => j.job_id);
    expect(listed).not.toContain(ids.unservable);
    expect(listed).toEqual(expect.arrayContaining([ids.soak, ids.nan, ids.inf, ids.past, ids.misfit]));
    const logged = platform.logText().split('\n').filter((line) => line.includes(ids.unservable));
    expect(logged.some((line) => line.includes('"level":50') && line.includes('left out of the list'))).toBe(true);

    const one = await get(`/jobs/${ids.unservable}`);
    expect(one.statusCode).toBe(500);
    expect(one.json()).toEqual({ detail: 'internal error', request_id: one.headers['x-request-id'] });
  });

  it('reads a legacy row\'s config with the defaults of today (sft, QLoRA, every hyperparameter), and leaves out one that does not parse', async () => {
    const one = await get(`/jobs/${ids.legacy}`);
    expect(one.statusCode).toBe(200);
    expect(one.json().training_config).toMatchObject({ base_model_id: 'tiny', trainer_type: 'sft', method: 'QLoRA', hyperparameters: { learning_rate: 0.0002, batch_size: 2 } });
    const listed = (await get('/jobs')).json().jobs.map((j: { job_id: string }) => j.job_id);
    expect(listed).toContain(ids.legacy);
    expect(listed).not.toContain(ids.badConfig);
    expect(platform.logText().split('\n').some((line) => line.includes(ids.badConfig) && line.includes('hyperparameters.batch_size'))).toBe(true);
    expect((await get(`/jobs/${ids.badConfig}`)).statusCode).toBe(500);
    const page = (await v1('/v1/fine_tuning/jobs?limit=100')).json().data.map((j: { id: string }) => j.id);
    expect(page).toContain(ids.legacy);
    expect(page).not.toContain(ids.badConfig);
    expect((await v1(`/v1/fine_tuning/jobs/${ids.legacy}`)).statusCode).toBe(200);
  });

  it('/v1: lists and retrieves the same jobs, the unservable one left out (a 500 with the request id on its own)', async () => {
    const page = await v1('/v1/fine_tuning/jobs?limit=100');
    expect(page.statusCode).toBe(200);
    const listed = page.json().data.map((j: { id: string }) => j.id);
    expect(listed).toEqual(expect.arrayContaining([ids.soak, ids.nan, ids.inf, ids.past, ids.misfit]));
    expect(listed).not.toContain(ids.unservable);
    for (const id of [ids.soak, ids.nan, ids.inf, ids.past, ids.misfit]) expect((await v1(`/v1/fine_tuning/jobs/${id}`)).statusCode, id).toBe(200);
    // running with eta 40: finishes 40 s after its last update; a completed job has no estimate
    expect((await v1(`/v1/fine_tuning/jobs/${ids.nan}`)).json().estimated_finish).toEqual(expect.any(Number));
    expect((await v1(`/v1/fine_tuning/jobs/${ids.soak}`)).json()).toMatchObject({ status: 'succeeded', estimated_finish: null });
    const checkpoints = await v1(`/v1/fine_tuning/jobs/${ids.nan}/checkpoints`);
    expect(checkpoints.json().data).toMatchObject([{ step_number: 10, metrics: { train_loss: null, valid_loss: null } }]);

    const one = await v1(`/v1/fine_tuning/jobs/${ids.unservable}`);
    expect(one.statusCode).toBe(500);
    expect(one.json().error.message).toContain(String(one.headers['x-request-id']));
    expect(platform.logText()).toContain(ids.unservable);
  });
});
