// Training jobs end to end on the embedded pieces: real uploads and processing, a real worker, the real
// core training the tiny model; plus every check POST /train makes before queueing, and ownership.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobWorkDir } from '@ftp/worker';
import type { PreflightReport } from '@ftp/schema';
import { launchChromium } from '../../../test/support/browser.ts';
import { csv, multipartBody } from '../../../test/support/preprocessing.ts';
import { loraRequest, qaCsv, startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';

let h: TrainingHarness;
let alice: Record<string, string>;
let bob: Record<string, string>;
let dataset: string;

beforeAll(async () => {
  // A submit waits for its check however long the worker's warm core takes to start (10 s by default, then the job's
  // own pre-flight checks it): the refusals at submit below do not depend on how loaded the machine is.
  h = await startTrainingHarness({ AUTH_MODE: 'token', PROGRESS_INTERVAL_S: '1', SUBMIT_CHECK_MS: '120000' });
  alice = { authorization: `Bearer ${(await h.platform.apiKeys.create('alice', 'a')).key}` };
  bob = { authorization: `Bearer ${(await h.platform.apiKeys.create('bob', 'b')).key}` };
  dataset = await h.dataset(qaCsv(), {}, alice);
}, 240_000);
afterAll(() => h.close());

const submit = (body: unknown, headers = alice) => h.train({ method: 'POST', url: '/train', payload: body as object, headers });

function parseSse(text: string): Array<{ event: string; data: Record<string, unknown> }> {
  return text
    .split('\n\n')
    .filter((block) => block.includes('event:'))
    .map((block) => ({
      event: /event: (.*)/.exec(block)![1]!,
      data: JSON.parse(/data: (.*)/.exec(block)![1]!) as Record<string, unknown>,
    }));
}

describe('a LoRA SFT job on the tiny model', () => {
  let jobId: string;
  let finished: Record<string, unknown>;
  let losses: number[];

  it('runs queued → preparing → training → completed, with falling loss and finite metrics', async () => {
    const res = await submit(loraRequest(dataset));
    expect(res.statusCode, res.body).toBe(200);
    jobId = res.json().job_id;
    finished = await h.waitFor(jobId, (j) => j.status === 'completed' || j.status === 'failed', 240_000, alice);
    expect(finished.error ?? null, JSON.stringify(finished)).toBeNull();
    expect(finished.status).toBe('completed');

    const events = parseSse((await h.train({ url: `/jobs/${jobId}/events`, headers: alice })).body);
    expect(events.filter((e) => e.event === 'status').map((e) => e.data.status)).toEqual(['queued', 'preparing', 'training', 'completed']);
    losses = events.filter((e) => e.event === 'progress').map((e) => e.data.loss as number);
    expect(losses.length).toBeGreaterThanOrEqual(5);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! * 0.7);
    expect(events.at(-1)).toMatchObject({ event: 'end', data: { status: 'completed' } });
    // every event says when it was recorded, in order (the console's log shows it, #39)
    const times = events.filter((e) => e.event !== 'end').map((e) => Date.parse(String(e.data.created_at)));
    expect(times.every((t) => t >= Date.parse(finished.created_at as string) - 1000)).toBe(true);
    expect(times).toEqual([...times].sort((a, b) => a - b));

    const metrics = finished.metrics as Record<string, number>;
    for (const name of ['eval_loss', 'perplexity', 'accuracy', 'eval_runtime']) expect(Number.isFinite(metrics[name]), name).toBe(true);
    expect(metrics.perplexity).toBeCloseTo(Math.exp(metrics.eval_loss!), 3);
    // the tokens the core trained on are kept with the job's metrics (max_steps: the report predicts them from its mean row)
    const trained = (await h.platform.jobs.getForWorker(jobId))!.metrics!.trained_tokens!;
    expect(Number.isInteger(trained)).toBe(true);
    expect(trained / (finished.preflight as PreflightReport).training_tokens).toBeCloseTo(1, 1);
    expect(finished.progress).toMatchObject({ step: 30, total_steps: 30 });
    // What it spent around its steps (loading, preparing, evaluating, saving) is kept with this host's speed: the next
    // dry run's time is start to completed, not the steps alone (#39).
    const [speed] = await h.platform.workers.throughput({ base_model_id: 'tiny', method: 'LoRA', trainer_type: 'sft' });
    expect(speed).toMatchObject({ measured_by: 'job', overhead_seconds: expect.any(Number) });
    const row = (await h.platform.jobs.getForWorker(jobId))!;
    const took = (row.finished_at!.getTime() - row.started_at!.getTime()) / 1000;
    const steps = (finished.preflight as PreflightReport).training_tokens / speed!.tokens_per_second;
    expect(speed!.overhead_seconds!).toBeGreaterThan(0);
    expect(Math.abs(speed!.overhead_seconds! + steps - took), `${speed!.overhead_seconds} + ${steps} vs ${took}`).toBeLessThan(5);
    expect(finished.tracker_url).toMatch(new RegExp(`/jobs/${jobId}/dashboard$`));
    // The config as it applied: 30 steps of 5 per epoch (20 train rows, batch 4) are 6 epochs, not the stored default
    // 3 that max_steps overrode; an SFT LoRA job shows no GRPO or preference setting.
    const perEpoch = (finished.preflight as PreflightReport).steps.per_epoch;
    expect(perEpoch).toBe(5);
    const hyperparameters = (finished.training_config as { hyperparameters: Record<string, unknown> }).hyperparameters;
    expect(hyperparameters).toMatchObject({ max_steps: 30, epochs: 6, lora_rank: 16 });
    for (const name of ['num_generations', 'max_completion_length', 'beta', 'max_prompt_length']) expect(hyperparameters, name).not.toHaveProperty(name);
  }, 300_000);

  it('stores the adapter in blob storage and lists the job', async () => {
    const prefix = h.platform.blobs.keyFromUri(finished.adapter_path as string)!;
    const files = (await h.platform.blobs.list(`${prefix}/`)).map((b) => b.key.slice(prefix.length + 1));
    expect(files).toEqual(expect.arrayContaining(['adapter_config.json', 'adapter_model.safetensors', 'chat_template.jinja']));
    expect((finished.artifacts as { raw: { adapter: string } }).raw.adapter).toBe(finished.adapter_path);
    const list = (await h.train({ url: '/jobs', headers: alice })).json().jobs;
    expect(list.map((j: { job_id: string }) => j.job_id)).toContain(jobId);
    // The stored config never holds a secret, and neither does any row.
    expect(JSON.stringify(await h.platform.db.query('SELECT * FROM training_jobs'))).not.toMatch(/hub_token|api_key/);
  });

  it('the dashboard draws the loss curve from the stored progress', async () => {
    const res = await h.train({ url: `/jobs/${jobId}/dashboard`, headers: alice });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.body).toContain('<svg id="loss-curve"');
    expect(res.body.match(/<circle class="train"/g)?.length).toBe(losses.length);
    expect(res.body).toContain(`${losses.at(-1)!.toFixed(4)}</title>`);
    expect(res.body).toContain('id="status">completed<');
  });

  it('a browser opening tracker_url without a key is told where to sign in, in HTML; other clients keep the JSON 401', async () => {
    const browser = await h.train({ url: `/jobs/${jobId}/dashboard`, headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(browser.statusCode).toBe(401);
    expect(browser.headers['content-type']).toMatch(/text\/html/);
    expect(browser.body).toContain(`/training/${jobId}"`);
    expect(browser.body).not.toContain('loss-curve');
    const client = await h.train({ url: `/jobs/${jobId}/dashboard` });
    expect([client.statusCode, typeof client.json().detail]).toEqual([401, 'string']);
  });

  it('keeps the pre-flight report its worker made before training, and shows it on its page', async () => {
    const report = finished.preflight as PreflightReport;
    expect(report).toMatchObject({ trainer_type: 'sft', method: 'LoRA', max_length: 64, steps: { total: 30, effective_batch_size: 4 } });
    expect(report.samples[0]!.segments.some((s) => s.trained)).toBe(true);
    expect(report.estimates.map((e) => e.worker_id)).toHaveLength(1);
    const page = (await h.train({ url: `/jobs/${jobId}/dashboard`, headers: alice })).body;
    expect(page).toContain('<section id="preflight">');
    expect(page).toMatch(/<mark>[^<]+<\/mark>/);
    // the job's speed is recorded for the next dry run's estimate
    const rows = await h.platform.workers.throughput({ base_model_id: 'tiny', method: 'LoRA', trainer_type: 'sft' });
    expect(rows.some((r) => r.measured_by === 'job' && r.tokens_per_second > 0)).toBe(true);
  });

  it('renders in headless Chromium: the curve has a point per progress event (screenshot kept)', async () => {
    await h.training.listen({ host: '127.0.0.1', port: 0 });
    const { port } = h.training.server.address() as AddressInfo;
    const browser = await launchChromium();
    try {
      const page = await (await browser.newContext({ extraHTTPHeaders: alice, viewport: { width: 900, height: 1100 } })).newPage();
      const asked: string[] = [];
      page.on('request', (request) => asked.push(new URL(request.url()).pathname));
      const response = await page.goto(`http://127.0.0.1:${port}/jobs/${jobId}/dashboard`, { waitUntil: 'networkidle' });
      expect(response?.status()).toBe(200);
      expect(await page.locator('#status').textContent()).toBe('completed');
      expect(await page.locator('#loss-curve circle.train').count()).toBe(losses.length);
      // no external asset: the page asks for nothing else (its icon is inline: dashboard.test.ts)
      expect(asked).toEqual([`/jobs/${jobId}/dashboard`]);
      const box = await page.locator('#loss-curve path.curve').boundingBox();
      expect(box!.width).toBeGreaterThan(400);
      const shot = path.join(os.tmpdir(), 'ftp-dashboard.png');
      await page.screenshot({ path: shot, fullPage: true });
      const png = await fs.readFile(shot);
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      expect(png.length).toBeGreaterThan(10_000);
    } finally {
      await browser.close();
    }
  }, 120_000);

  it("bob gets 404 for alice's job on every endpoint", async () => {
    for (const [method, url] of [['GET', `/jobs/${jobId}`], ['DELETE', `/jobs/${jobId}`], ['POST', `/jobs/${jobId}/cancel`], ['GET', `/jobs/${jobId}/events`], ['GET', `/jobs/${jobId}/dashboard`]] as const) {
      expect((await h.train({ method, url, headers: bob })).statusCode, `${method} ${url}`).toBe(404);
    }
    expect((await h.train({ url: '/jobs', headers: bob })).json().jobs).toEqual([]);
    expect((await submit(loraRequest(dataset), bob)).statusCode).toBe(404);
  });

  it('DELETE removes the row, config and adapter and lists them; the worker drops its work folder', async () => {
    const res = await h.train({ method: 'DELETE', url: `/jobs/${jobId}`, headers: alice });
    expect(res.statusCode, res.body).toBe(200);
    const deleted = res.json().deleted_resources as string[];
    expect(deleted[0]).toBe(`training_jobs/${jobId}`);
    expect(deleted.some((r) => r.endsWith('/config.json'))).toBe(true);
    expect(deleted.some((r) => r.endsWith('/adapter/adapter_model.safetensors'))).toBe(true);
    expect(await h.platform.blobs.list(`jobs/alice/${jobId}/`)).toEqual([]);
    expect((await h.train({ url: `/jobs/${jobId}`, headers: alice })).statusCode).toBe(404);
    // The worker's local copies (dataset, run folder) are its own: it deletes those of a deleted job on its heartbeat.
    const workDir = jobWorkDir(h.platform, jobId);
    for (let i = 0; i < 200 && (await fs.stat(workDir).then(() => true, () => false)); i++) await new Promise((r) => setTimeout(r, 50));
    await expect(fs.stat(workDir)).rejects.toThrow();
  });
});

describe('a GRPO job whose grader the base model never passes', () => {
  // #39: an all-or-nothing grader scored every answer 0; the job ran on at "loss 0" (GRPO's loss is ~0 by
  // construction) and said nothing. Its figure is the reward, and the job says it cannot learn.
  it('shows its reward where an SFT job shows its loss, and warns that it learns nothing', async () => {
    const prompts = await h.dataset(qaCsv(8), { processing_mode: 'prompt_only', config: { field_mappings: { user_field: { type: 'column', value: 'question' } }, split_config: { type: 'no_split' } } }, alice);
    const res = await submit(loraRequest(prompts, { max_steps: 3, logging_steps: 1, num_generations: 4, max_prompt_length: 32, max_completion_length: 8, equal_reward_steps: 2 }, {
      trainer_type: 'grpo',
      reward_config: [{ type: 'built_in', name: 'format', function_name: 'format_reward' }],
    }));
    expect(res.statusCode, res.body).toBe(200);
    const jobId = res.json().job_id as string;
    const finished = await h.waitFor(jobId, (j) => j.status === 'completed' || j.status === 'failed', 240_000, alice);
    expect(finished.error ?? null, JSON.stringify(finished)).toBeNull();
    expect(finished.progress).toMatchObject({ step: 3, reward: 0 });
    expect(finished.metrics).toMatchObject({ reward: 0 });
    const listed = (await h.train({ url: '/jobs', headers: alice })).json().jobs.find((j: { job_id: string }) => j.job_id === jobId);
    expect(listed.progress.reward).toBe(0);
    const events = parseSse((await h.train({ url: `/jobs/${jobId}/events`, headers: alice })).body);
    expect(events.filter((e) => e.event === 'progress').map((e) => e.data.reward)).toEqual([0, 0, 0]);
    const warnings = events.filter((e) => e.event === 'log' && e.data.level === 'warning').map((e) => String(e.data.message));
    expect(warnings.filter((m) => /learns nothing/.test(m))).toHaveLength(1);
  }, 300_000);
});

describe('secrets', () => {
  it('hub_token and the tracker key reach no row, stored file, spec on disk or log line (merged + GGUF export)', async () => {
    const hubToken = 'hf_SECRET_hub_token_4242';
    const trackerKey = 'SECRET_tracker_key_4343';
    const config = { tracker_config: { api_key: trackerKey, project: 'p' }, export_config: { format: 'merged', include_gguf: true, gguf_quantization: 'f16' } };
    const body = { ...loraRequest(dataset, { max_steps: 2, logging_steps: 1 }, config), hub_token: hubToken };
    const id = (await submit(body)).json().job_id;
    const job = await h.waitFor(id, (j) => j.status === 'completed' || j.status === 'failed', 180_000, alice);
    expect(job.status, JSON.stringify(job)).toBe('completed');
    // format merged: the adapter and the merged model (an ordinary HF folder with the chat template) are stored.
    const merged = h.platform.blobs.keyFromUri((job.artifacts as { raw: { merged: string } }).raw.merged)!;
    const mergedFiles = (await h.platform.blobs.list(`${merged}/`)).map((b) => b.key.slice(merged.length + 1));
    expect(mergedFiles).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json', 'chat_template.jinja']));
    expect((job.artifacts as { raw: { adapter: string } }).raw.adapter).toBe(job.adapter_path);
    // include_gguf: the merged model as one GGUF file, its Modelfile beside it.
    expect(job.gguf_path).toMatch(/\/gguf\/model-f16\.gguf$/);
    expect((job.artifacts as { file: { gguf: string } }).file.gguf).toBe(job.gguf_path);
    const ggufKey = h.platform.blobs.keyFromUri(job.gguf_path as string)!;
    const head: Buffer[] = [];
    for await (const chunk of await h.platform.blobs.get(ggufKey, { start: 0, end: 4 })) head.push(chunk as Buffer);
    expect(Buffer.concat(head).toString()).toBe('GGUF');
    expect(await h.platform.blobs.stat(ggufKey.replace(/model-f16\.gguf$/, 'Modelfile'))).toBeDefined();
    const places: string[] = [JSON.stringify(await h.platform.db.query('SELECT * FROM training_jobs')), JSON.stringify(await h.platform.db.query('SELECT * FROM job_events')), h.platform.logText()];
    for (const blob of await h.platform.blobs.list(`jobs/alice/${id}/`)) {
      const chunks: Buffer[] = [];
      for await (const chunk of await h.platform.blobs.get(blob.key)) chunks.push(chunk as Buffer);
      places.push(Buffer.concat(chunks).toString('latin1'));
    }
    const work = jobWorkDir(h.platform, id);
    for (const entry of await fs.readdir(work, { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) places.push(await fs.readFile(path.join(entry.parentPath, entry.name), 'latin1'));
    }
    expect(places.length).toBeGreaterThan(5);
    for (const text of places) {
      expect(text).not.toContain(hubToken);
      expect(text).not.toContain(trackerKey);
    }
  }, 240_000);
});

describe('jobs that fail or are cancelled', () => {
  it('a dataset with tools on a base model whose template writes none is a 422 at submit naming the model', async () => {
    const tools = JSON.stringify([{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }]);
    const rows = csv([['question', 'answer', 'tools'], ...Array.from({ length: 6 }, (_, i) => [`Weather ${i}?`, 'Sunny.', tools])]);
    const mappings = { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' }, tools_field: { type: 'column', value: 'tools' } };
    const withTools = await h.dataset(rows, { config: { field_mappings: mappings } }, alice);
    const res = await submit(loraRequest(withTools));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail).toEqual([{
      loc: ['body', 'training_config', 'base_model_id'],
      msg: 'the chat template of base model "tiny" has no tool support (it writes neither tool definitions nor tool calls), but the dataset\'s records use tools; train a model whose template has them (Qwen2.5, Qwen3, Llama 3.1 or later), or a dataset without tools',
      type: 'value_error',
    }]);
  });

  it('a max_length beyond the base model\'s context is a 422 at submit naming the model and its context, not a failed job', async () => {
    const before = (await h.train({ url: '/jobs', headers: alice })).json().jobs.length;
    const res = await submit(loraRequest(dataset, { max_length: 4096 }));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail).toEqual([{
      loc: ['body', 'training_config', 'hyperparameters', 'max_length'],
      msg: 'max_length 4096 exceeds the context of base model "tiny" (512 tokens); set max_length to 512 or less',
      type: 'too_big',
    }]);
    expect((await h.train({ url: '/jobs', headers: alice })).json().jobs.length).toBe(before);
    // left out, it is the default cut to the model's context: the job is queued with what it will train with
    const { max_length: _, ...rest } = loraRequest(dataset).training_config.hyperparameters;
    const job = await submit({ ...loraRequest(dataset), training_config: { ...loraRequest(dataset).training_config, hyperparameters: { ...rest, max_steps: 1 } } });
    expect(job.statusCode, job.body).toBe(200);
    const row = (await h.platform.jobs.getForWorker(job.json().job_id))!;
    expect((row.training_config as { hyperparameters: { max_length: number } }).hyperparameters.max_length).toBe(512);
    // the submit's check counted its data (#56): its report is the job's before any worker takes it
    expect(row.preflight, JSON.stringify(row)).toMatchObject({ max_length: 512, steps: { total: 1 } });
    expect((await h.train({ method: 'POST', url: `/jobs/${job.json().job_id}/cancel`, headers: alice })).statusCode).toBe(200);
    await h.waitFor(job.json().job_id, (j) => j.status === 'failed', 120_000, alice);
  }, 180_000);

  it('a job whose rows all train nothing is a 422 at submit naming max_length and the longest row, and nothing is stored (#56)', async () => {
    const before = (await h.train({ url: '/jobs', headers: alice })).json().jobs.length;
    // 16 tokens end before any answer starts: such a job failed at step 1 with a NaN loss, once a worker took it
    const res = await submit(loraRequest(dataset, { max_length: 16 }));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail).toEqual([{
      loc: ['body', 'training_config'],
      msg: expect.stringMatching(/^every train row is longer than max_length 16 where its answer starts, .*the longest, row \d+, is 39 tokens: raise max_length to 39, or shorten the rows$/),
      type: 'value_error',
    }]);
    expect((await h.train({ url: '/jobs', headers: alice })).json().jobs.length).toBe(before);

    // Unchecked at submit (SUBMIT_CHECK_MS 0, as when no worker answers in time), the job is queued and its own
    // pre-flight refuses it with the same message before the model loads, not a NaN loss at step 1.
    const config = h.platform.config as { SUBMIT_CHECK_MS: number };
    config.SUBMIT_CHECK_MS = 0;
    try {
      const queued = await submit(loraRequest(dataset, { max_length: 16 }));
      expect(queued.statusCode, queued.body).toBe(200);
      const failed = await h.waitFor(queued.json().job_id, (j) => j.status === 'failed' || j.status === 'completed', 120_000, alice);
      expect(failed.error).toMatch(/every train row is longer than max_length 16 where its answer starts, .*raise max_length to 39, or shorten the rows/);
      expect(failed.progress ?? null).toBeNull();
    } finally {
      config.SUBMIT_CHECK_MS = 120_000;
    }
  }, 180_000);

  it('cancel stops a running job (409 on delete while it runs) and it ends failed "cancelled by user"', async () => {
    const id = (await submit(loraRequest(dataset, { max_steps: 5000 }))).json().job_id;
    await h.waitFor(id, (j) => j.status === 'training', 120_000, alice);
    expect((await h.train({ method: 'DELETE', url: `/jobs/${id}`, headers: alice })).statusCode).toBe(409);
    const cancel = await h.train({ method: 'POST', url: `/jobs/${id}/cancel`, headers: alice });
    expect(cancel.statusCode).toBe(200);
    const job = await h.waitFor(id, (j) => j.status === 'failed', 120_000, alice);
    expect(job.error).toBe('cancelled by user');
    expect((job.progress as { step: number }).step).toBeLessThan(5000);
    expect((await h.train({ method: 'POST', url: `/jobs/${id}/cancel`, headers: alice })).statusCode).toBe(409);
  }, 300_000);
});

describe('a dry run (POST /train with dry_run)', () => {
  const dryRun = (body: ReturnType<typeof loraRequest>, headers = alice) => submit({ ...body, dry_run: true }, headers);

  it('answers the pre-flight report from a worker, measuring this host once, and creates no job', async () => {
    const before = (await h.train({ url: '/jobs', headers: alice })).json().jobs.length;
    await h.platform.db.query('DELETE FROM throughput');
    const res = await dryRun(loraRequest(dataset, { max_steps: -1, epochs: 2, batch_size: 4, gradient_accumulation_steps: 2, max_length: 30 }));
    expect(res.statusCode, `${res.body}\n${h.platform.logText().split('\n').filter((l) => l.includes('"level":50')).join('\n')}`).toBe(200);
    const report = res.json().preflight as PreflightReport;
    const processed = (await h.pre({ url: `/datasets/${dataset}`, headers: alice })).json();
    const rows = (name: string) => processed.splits.find((s: { split_name: string }) => s.split_name === name)?.num_rows ?? null;
    expect(report.examples).toEqual({ train: rows('train'), test: rows('test') });
    // steps: ceil(ceil(train / 4) / 2) per epoch, two epochs
    expect(report.steps).toEqual({ per_epoch: Math.ceil(Math.ceil(rows('train') / 4) / 2), total: 2 * Math.ceil(Math.ceil(rows('train') / 4) / 2), effective_batch_size: 8 });
    expect(report.tokens.min).toBeGreaterThan(0);
    expect(report.tokens.max).toBeGreaterThanOrEqual(report.tokens.p95);
    // 30 tokens is shorter than every rendered example (33 to 39 with the tiny model's tokenizer), though longer than
    // some of their prompts (25 to 33): each is cut, some answers survive, and the warning says what to raise
    expect(report.truncated.examples).toBe(rows('train'));
    expect(report.warnings.map((w) => w.code)).toContain('truncated');
    expect(report.warnings.find((w) => w.code === 'truncated')!.message).toMatch(/max_length/);
    expect(report.samples).toHaveLength(2);
    expect(report.throughput!.tokens_per_second).toBeGreaterThan(0);
    const [estimate] = report.estimates;
    expect(estimate).toMatchObject({ measured_by: 'probe', fits: true });
    // Until a job runs here, the probe's own time around its steps (its core starting, the model loaded, the data
    // prepared) is the estimate's time around the steps: the wall time is more than the steps alone.
    expect(report.throughput!.steps_seconds).toBeGreaterThan(0);
    expect(estimate!.overhead_seconds).toBeGreaterThan(0);
    expect(estimate!.wall_seconds).toBeCloseTo(report.training_tokens / estimate!.tokens_per_second! + estimate!.overhead_seconds!, 0);
    expect((await h.train({ url: '/jobs', headers: alice })).json().jobs.length).toBe(before);

    // measured once: the second dry run uses the recorded figure
    const again = (await dryRun(loraRequest(dataset))).json().preflight as PreflightReport;
    expect(again.throughput).toBeNull();
    expect(again.estimates[0]!.tokens_per_second).toBe(estimate!.tokens_per_second);
  }, 240_000);

  it('refuses what a real submit refuses (422 at the field, 404), and what the core would refuse, before any job', async () => {
    const qlora = await dryRun(loraRequest(dataset, {}, { method: 'QLoRA' }));
    expect(qlora.statusCode).toBe(422);
    expect(qlora.json().detail[0].loc).toEqual(['body', 'training_config', 'method']);
    expect((await dryRun(loraRequest('pd_nothing'))).statusCode).toBe(404);
    expect((await dryRun(loraRequest(dataset), bob)).statusCode).toBe(404);
    // a real job would fail on this after queueing; the dry run says so at once
    const long = await dryRun(loraRequest(dataset, { max_length: 4096 }));
    expect(long.statusCode, long.body).toBe(422);
    expect(long.json().detail[0]).toMatchObject({ loc: ['body', 'training_config', 'hyperparameters', 'max_length'] });
    expect(long.json().detail[0].msg).toMatch(/max_length 4096 exceeds the context of base model "tiny" \(512 tokens\)/);
    // 16 tokens end before any answer starts: nothing to learn (#56: such a job failed at step 1 with a NaN loss)
    const short = await dryRun(loraRequest(dataset, { max_length: 16 }));
    expect(short.statusCode, short.body).toBe(422);
    expect(short.json().detail[0].msg).toMatch(/^every train row is longer than max_length 16 where its answer starts, .*the longest, row \d+, is 39 tokens: raise max_length to 39/);
  }, 120_000);
});

describe('POST /train checks before queueing', () => {
  const cfg = ['body', 'training_config'];
  it.each([
    ['trainer that does not fit the dataset', { trainer_type: 'dpo' }, {}, [...cfg, 'trainer_type'], /needs a dataset processed with processing_mode preference/],
    ['QLoRA without a CUDA worker', { method: 'QLoRA' }, {}, [...cfg, 'method'], /QLoRA needs a CUDA GPU.*use LoRA/],
    ['unknown local model', { base_model_id: 'nope' }, {}, [...cfg, 'base_model_id'], /not found; looked in the model store \(.*models\/nope\) and the local model folder \(.*nope\)/],
    ['a tracker this version cannot run', { tracker_config: { provider: 'wandb' } }, {}, [...cfg, 'tracker_config', 'provider'], /wandb tracker is not available in this version/],
  ])('%s → 422 at the field', async (_name, config, hyper, loc, msg) => {
    const res = await submit(loraRequest(dataset, hyper, config));
    expect(res.statusCode, res.body).toBe(422);
    const issue = res.json().detail.find((d: { loc: string[] }) => d.loc.join('.') === loc.join('.'));
    expect(issue, res.body).toBeDefined();
    expect(issue.msg).toMatch(msg);
  });

  it('evaluation needs a test split; a reward needs a real column', async () => {
    const noTest = await h.dataset(qaCsv(8), { config: { field_mappings: { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } } } }, alice);
    const res = await submit(loraRequest(noTest, {}, { eval_config: { eval_strategy: 'steps' } }));
    expect(res.statusCode).toBe(422);
    expect(res.json().detail[0].loc).toEqual([...cfg, 'eval_config', 'eval_strategy']);

    const prompts = await h.dataset(qaCsv(8), { processing_mode: 'prompt_only', config: { field_mappings: { user_field: { type: 'column', value: 'question' } } } }, alice);
    const grpo = await submit(loraRequest(prompts, {}, { trainer_type: 'grpo', reward_config: [{ type: 'string_check', name: 'exact', reference_field: 'answr' }] }));
    expect(grpo.statusCode).toBe(422);
    expect(grpo.json().detail[0]).toMatchObject({ loc: [...cfg, 'reward_config', '0', 'reference_field'] });
    expect(grpo.json().detail[0].msg).toMatch(/question, answer/);
  });

  it('an unknown dataset is a 404 and nothing is queued', async () => {
    const before = (await h.train({ url: '/jobs', headers: alice })).json().jobs.length;
    expect((await submit(loraRequest('pd_nothing'))).statusCode).toBe(404);
    expect((await h.train({ url: '/jobs', headers: alice })).json().jobs.length).toBe(before);
  });

  it('an upload’s id where a processed dataset goes is a 422 saying to process it first; another user’s is a 404', async () => {
    // #39: a ds_… id from POST /datasets/upload given as processed_dataset_id said only "not found"
    const { body: payload, contentType } = multipartBody('raw.csv', qaCsv(4));
    const upload = (await h.pre({ method: 'POST', url: '/datasets/upload', payload, headers: { 'content-type': contentType, ...alice } })).json();
    const res = await submit(loraRequest(upload.dataset_id));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail[0]).toMatchObject({ loc: ['body', 'processed_dataset_id'], type: 'unprocessed_upload' });
    expect(res.json().detail[0].msg).toBe(`${upload.dataset_id} is an upload (raw.csv), not a processed dataset: process it first with POST /datasets/process (dataset_id ${upload.dataset_id}, and field_mappings for its columns), then use the processed_dataset_id that answers`);
    expect((await submit(loraRequest(upload.dataset_id), bob)).statusCode).toBe(404); // never says another user's upload exists
  });
});

describe('a dry run while it measures this host', () => {
  it('says in the worker\'s log what the probe does and for how long, at every interval (#39)', async () => {
    // A first dry run on this host (no speed measured) runs the one-shot core's probe; held 3 s in its first stage,
    // the interval 1 s: three or more growing updates reach the log a person watches before the answer comes.
    await h.platform.db.query('DELETE FROM throughput');
    const before = h.platform.logText().length;
    process.env.FTCORE_TEST_HOLD = 'preflight=3';
    try {
      const res = await submit({ ...loraRequest(dataset, { max_steps: 2 }), dry_run: true });
      expect(res.statusCode, res.body).toBe(200);
    } finally {
      delete process.env.FTCORE_TEST_HOLD;
    }
    const said = h.platform.logText().slice(before).split('\n').flatMap((line) => /pre-flight probe: loading the ML libraries: (\d+) s so far/.exec(line)?.[1] ?? []).map(Number);
    expect(said.length, h.platform.logText().slice(before).slice(-4000)).toBeGreaterThanOrEqual(3);
    expect(said).toEqual([...said].sort((a, b) => a - b));
    expect(said.at(-1)!).toBeGreaterThan(said[0]!);
  }, 300_000);
});

describe('a job while it prepares', () => {
  it('while preparing, the job\'s events say what the core does and for how long, at every interval (#39)', async () => {
    // The core held 4 s in its first stage (its test hook), the interval 1 s: three or more growing updates, all
    // before training starts.
    process.env.FTCORE_TEST_HOLD = 'train=4';
    let held: string;
    try {
      const res = await submit(loraRequest(dataset, { max_steps: 2 }));
      held = res.json().job_id;
      expect((await h.waitFor(held, (j) => j.status === 'completed' || j.status === 'failed', 240_000, alice)).status).toBe('completed');
    } finally {
      delete process.env.FTCORE_TEST_HOLD;
    }
    const events = parseSse((await h.train({ url: `/jobs/${held}/events`, headers: alice })).body);
    const preparing = events.slice(events.findIndex((e) => e.data.status === 'preparing'), events.findIndex((e) => e.data.status === 'training'));
    const beats = preparing.map((e) => String(e.data.message ?? '')).filter((m) => /^loading the ML libraries: \d+ s so far$/.test(m));
    expect(beats.length, JSON.stringify(preparing)).toBeGreaterThanOrEqual(3);
    const seconds = beats.map((m) => Number(/(\d+) s so far/.exec(m)![1]));
    expect(seconds).toEqual([...seconds].sort((a, b) => a - b));
    expect(seconds.at(-1)!).toBeGreaterThan(seconds[0]!);
  }, 300_000);
});
