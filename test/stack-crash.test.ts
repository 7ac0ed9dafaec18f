// Crash safety, for real: the embedded stack runs as a child process, is SIGKILLed while a job trains,
// and is started again on the same data folder. The running job must end failed saying the worker
// stopped, its core must not train on as an orphan, and the job queued behind it must still run. Killed between a
// job's last step and completed, the resumed job trains no further (#56). Killed while a sweep's trial trains, the sweep
// goes on under the new worker from its recorded trials (#63).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack as startStackProcess, stackPorts, type StackProcess, type StackUrls } from './support/stack.ts';
import { tinyModelsDir } from './support/tiny-model.ts';
import { firstStepAfterQueued, historyMessages, jobHistory } from './support/job-events.ts';

let dataDir: string;
let env: Record<string, string>;
let urls: StackUrls;
let stack: StackProcess | undefined;
let pre: string;
let train: string;

const startStack = () => startStackProcess(env, urls);

async function job(id: string): Promise<Record<string, unknown>> {
  return (await (await fetch(`${train}/jobs/${id}`)).json()) as Record<string, unknown>;
}

async function waitFor(id: string, ok: (j: Record<string, unknown>) => boolean, timeoutMs = 180_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const current = await job(id);
    if (ok(current)) return current;
    if (Date.now() > deadline) throw new Error(`job ${id} stuck: ${JSON.stringify(current)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

function corePids(jobId: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', `ftcore train --spec ${path.join(dataDir, 'work', jobId)}`]).toString().trim().split('\n').map(Number);
  } catch {
    return [];
  }
}

/** A processed dataset of 16 question/answer rows (with a test split of 4 when `split`); its id. */
async function qaDataset(split = false): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob(['question,answer\n' + Array.from({ length: 16 }, (_, i) => `q${i},a${i}`).join('\n')]), 'qa.csv');
  const upload = (await (await fetch(`${pre}/datasets/upload`, { method: 'POST', body: form })).json()) as { dataset_id: string };
  const processed = (await (await fetch(`${pre}/datasets/process`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ dataset_name: 'crash', dataset_id: upload.dataset_id, config: { field_mappings: { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } }, ...(split ? { split_config: { type: 'manual_split', test_size: 4 } } : {}) } }),
  })).json()) as { processed_dataset_id: string };
  return processed.processed_dataset_id;
}

/** Submits a LoRA job on the tiny model; its id. */
async function submitJob(processedDatasetId: string, config: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${train}/train`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ processed_dataset_id: processedDatasetId, training_config: { base_model_id: 'tiny', provider: 'local', method: 'LoRA', ...config } }),
  });
  return ((await res.json()) as { job_id: string }).job_id;
}

beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-crash-'));
  const ports = await stackPorts();
  urls = ports.urls;
  env = { DATA_DIR: dataDir, MODELS_DIR: await tinyModelsDir(), LOG_LEVEL: 'warn', ...ports.env };
  pre = urls.preprocessing;
  train = urls.training;
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  await fs.rm(dataDir, { recursive: true, force: true });
});

describe('the stack killed while a job trains', () => {
  it('fails the running job on restart, stops its core, runs the queued one, and resumes a job that asked to', async () => {
    stack = await startStack();
    const dataset = await qaDataset();
    const submit = (resumeOnRestart = false) =>
      submitJob(dataset, { resume_on_restart: resumeOnRestart, hyperparameters: { max_steps: 100000, logging_steps: 1, batch_size: 4, gradient_accumulation_steps: 1, max_length: 32, save_strategy: 'no' } });
    const running = await submit();
    const queued = await submit(true);
    await waitFor(running, (j) => j.status === 'training' && (j.progress as { step: number } | null)?.step !== undefined);
    expect((await job(queued)).status).toBe('queued');
    expect(corePids(running).length).toBeGreaterThan(0);

    await stack.stop('SIGKILL');
    // The core notices its worker is gone (stdin closes) and stops instead of training on for nobody.
    for (let i = 0; i < 120 && corePids(running).length > 0; i++) await new Promise((r) => setTimeout(r, 500));
    expect(corePids(running)).toEqual([]);

    stack = await startStack();
    const failed = await job(running);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/^the worker wrk_[0-9a-f]+ stopped/);
    // Nothing was lost: the queued job is picked up by the new worker.
    const before = await waitFor(queued, (j) => j.status === 'training' && ((j.progress as { step: number } | null)?.step ?? 0) >= 3);

    // This one asked to be resumed: killed again, it goes back to the queue and continues from the
    // checkpoint its core saved when the worker went away, not from step 0.
    await stack.stop('SIGKILL');
    for (let i = 0; i < 120 && corePids(queued).length > 0; i++) await new Promise((r) => setTimeout(r, 500));
    stack = await startStack();
    const killedAt = (before.progress as { step: number }).step;
    expect(await firstStepAfterQueued(train, queued, 2)).toBeGreaterThan(killedAt);
    const cancel = await fetch(`${train}/jobs/${queued}/cancel`, { method: 'POST' });
    expect(cancel.status).toBe(200);
    expect((await waitFor(queued, (j) => j.status === 'failed')).error).toBe('cancelled by user');
    const list = (await (await fetch(`${train}/jobs`)).json()) as { jobs: Array<{ status: string }> };
    expect(list.jobs.map((j) => j.status)).toEqual(['failed', 'failed']);
  }, 600_000);

  it('killed between a job\'s last step and completed, trains it no further: one saving, the last checkpoint\'s model', async () => {
    // #56: a soak's worker killed after step 50 of 50 had the job resumed "from step 50", run a step 51, save and
    // evaluate twice. The core holds after its last step (FTCORE_TEST_HOLD trained=…) until the stack is killed.
    await stack?.stop();
    stack = await startStackProcess({ ...env, FTCORE_TEST_HOLD: 'trained=120' }, urls);
    const id = await submitJob(await qaDataset(), {
      resume_on_restart: true,
      hyperparameters: { max_steps: 4, logging_steps: 1, batch_size: 4, gradient_accumulation_steps: 1, max_length: 32, save_strategy: 'steps', save_steps: 2 },
    });
    const checkpointSteps = async () => ((await (await fetch(`${train}/jobs/${id}/checkpoints`)).json()) as { checkpoints: Array<{ step: number }> }).checkpoints.map((c) => c.step);
    for (let i = 0; i < 600 && !(await checkpointSteps()).includes(4); i++) await new Promise((r) => setTimeout(r, 300));
    expect(await checkpointSteps()).toContain(4);
    expect((await job(id)).status).toBe('training');
    await stack.stop('SIGKILL');
    for (let i = 0; i < 120 && corePids(id).length > 0; i++) await new Promise((r) => setTimeout(r, 500));
    expect(corePids(id)).toEqual([]);

    stack = await startStack();
    const done = await waitFor(id, (j) => j.status === 'completed' || j.status === 'failed');
    expect(done.status).toBe('completed');
    expect(done.progress).toMatchObject({ step: 4, total_steps: 4, eta_seconds: 0 });
    const history = await jobHistory(train, id);
    const messages = historyMessages(history);
    expect(messages).toContain('the checkpoint of step 4 is the last step\'s: the training is over, only saving is left');
    expect(messages.filter((m) => m === 'saving the trained model…')).toHaveLength(1);
    expect(history.filter((e) => e.kind === 'metrics' && (e.data as { final?: boolean }).final)).toHaveLength(1);
    expect(history.filter((e) => e.kind === 'progress').every((e) => e.data.step! <= 4)).toBe(true);
    // The model stored is the last step's checkpoint, byte for byte.
    const [jobFolder] = await fs.readdir(path.join(dataDir, 'blobs', 'jobs')).then((users) => users.map((u) => path.join(dataDir, 'blobs', 'jobs', u, id)));
    const stored = await fs.readFile(path.join(jobFolder!, 'adapter', 'adapter_model.safetensors'));
    const checkpoint = await fs.readFile(path.join(jobFolder!, 'checkpoints', 'checkpoint-4', 'adapter_model.safetensors'));
    expect(stored.equals(checkpoint)).toBe(true);
  }, 600_000);

  it('killed while a sweep\'s trial trains, goes on with the sweep under the new worker: the trial failed, the next one run, the best named', async () => {
    // The first trial holds after its last step (FTCORE_TEST_HOLD) until the stack is killed; the sweep's holder, the
    // worker, dies with it. Restarted, the sweep is queued again, its holder finds the trial's job failed, tells the
    // study so and proposes the second, and the sweep ends with both trials recorded once.
    await stack?.stop();
    stack = await startStackProcess({ ...env, FTCORE_TEST_HOLD: 'trained=120' }, urls);
    const dataset = await qaDataset(true);
    const res = await fetch(`${train}/sweeps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'crash', sampler: 'grid', pruner: 'none', seed: 1, budget: { trials: 2, parallel: 1 },
        space: { 'hyperparameters.learning_rate': { type: 'choice', choices: [0.02, 0.05] } },
        training_request: {
          processed_dataset_id: dataset,
          training_config: {
            base_model_id: 'tiny', provider: 'local', method: 'LoRA',
            hyperparameters: { max_steps: 4, logging_steps: 1, batch_size: 4, gradient_accumulation_steps: 1, max_length: 32, save_strategy: 'no' },
            eval_config: { eval_strategy: 'steps', eval_steps: 2 },
          },
        },
      }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const { sweep_id: sweepId } = (await res.json()) as { sweep_id: string };
    const sweep = async () => (await (await fetch(`${train}/sweeps/${sweepId}`)).json()) as { status: string; trials: Array<Record<string, any>>; best_job_id: string | null; error: string | null };
    let first: string | undefined;
    for (let i = 0; i < 600 && !first; i++) {
      const jobId = (await sweep()).trials[0]?.job_id;
      if (jobId && ((await job(jobId)).progress as { step: number } | null)?.step === 4) first = jobId;
      else await new Promise((r) => setTimeout(r, 300));
    }
    expect(first, JSON.stringify(await sweep())).toBeDefined();
    expect((await job(first!)).status).toBe('training');
    await stack.stop('SIGKILL');
    for (let i = 0; i < 120 && corePids(first!).length > 0; i++) await new Promise((r) => setTimeout(r, 500));

    stack = await startStack();
    let ended = await sweep();
    for (let i = 0; i < 600 && ['queued', 'running'].includes(ended.status); i++) {
      await new Promise((r) => setTimeout(r, 500));
      ended = await sweep();
    }
    expect(ended, JSON.stringify(ended)).toMatchObject({ status: 'completed', error: null });
    expect(ended.trials.map((t) => [t.trial, t.state]), JSON.stringify(ended.trials)).toEqual([[0, 'failed'], [1, 'completed']]);
    expect((await job(first!)).error).toMatch(/^the worker wrk_[0-9a-f]+ stopped/);
    expect(ended.best_job_id).toBe(ended.trials[1]!.job_id);
    expect((await job(ended.best_job_id!)).status).toBe('completed');
    // Its study (a journal file under DATA_DIR) is gone once it ended, as after a sweep that was never interrupted.
    const journal = path.join(dataDir, 'sweeps', `${sweepId}.journal`);
    for (let i = 0; i < 60 && (await fs.stat(journal).then(() => true, () => false)); i++) await new Promise((r) => setTimeout(r, 500));
    expect(await fs.stat(journal).then(() => true, () => false)).toBe(false);
  }, 600_000);
});
