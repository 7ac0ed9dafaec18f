// Benchmark (not a test): how close pre-flight's time estimate (`estimates[].wall_seconds` of a dry run, "from start to
// completed") comes to the time a job really takes from submit to completed, on the embedded stack of this machine
// with the README's model (smollm2-135m) and the README's data. Two jobs, each run `--runs` times in a row, a dry run
// before each: the README's 30-step job and a 200-step one. The first dry run on a fresh host has only the probe's
// speed and no overhead yet; every later one has what the previous real job measured. The baseline is the job itself:
// each line prints estimate, actual and their ratio.
//
//   pnpm exec tsx bench/preflight/wall-time.ts [--runs 3]
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pretrainedToolModelDir, PRETRAINED_TOOL_MODEL } from '../../test/support/tiny-model.ts';
import { stackPorts, startStack } from '../../test/support/stack.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } } });
const RUNS = Number(values.runs);

// README.md's qa.csv (step 0), and its job (step 4), with max_steps the one thing that changes.
const QA = `question,answer
Who is the mayor of Quillhaven?,Mara Voss.
What is the capital of France?,Paris.
What river runs through Quillhaven?,The Tessel.
What is the postal code of Quillhaven?,QH-7731.
What is the festival of Quillhaven called?,Lantern Week.
What is the largest planet?,Jupiter.
What is H2O?,Water.
What is 2+2?,4.
`;
const job = (processed: string, maxSteps: number, dryRun: boolean) => ({
  processed_dataset_id: processed,
  job_name: `wall time ${maxSteps}`,
  ...(dryRun ? { dry_run: true } : {}),
  training_config: {
    base_model_id: PRETRAINED_TOOL_MODEL, provider: 'local', method: 'LoRA', trainer_type: 'sft',
    hyperparameters: { max_steps: maxSteps, logging_steps: 5, learning_rate: 0.001, batch_size: 4, gradient_accumulation_steps: 1, max_length: 128 },
  },
});

async function call(url: string, init: RequestInit = {}): Promise<any> {
  const res = await fetch(url, init);
  const body = await res.json();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url} → ${res.status}: ${JSON.stringify(body)}`);
  return body;
}
const post = (url: string, body: unknown) => call(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-bench-wall-'));
const { env, urls } = await stackPorts();
const stack = await startStack({ ...env, DATA_DIR: dataDir, MODELS_DIR: await pretrainedToolModelDir(), LOG_LEVEL: 'warn' }, urls);
try {
  const form = new FormData();
  form.append('file', new Blob([QA]), 'qa.csv');
  const upload = await call(`${urls.preprocessing}/datasets/upload`, { method: 'POST', body: form });
  const processed = await post(`${urls.preprocessing}/datasets/process`, {
    dataset_name: 'qa', dataset_id: upload.dataset_id,
    config: {
      field_mappings: { system_field: { type: 'template', value: 'You are a helpful assistant.' }, user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } },
      split_config: { type: 'manual_split', test_size: 0.25 },
    },
  });
  console.log('steps  run  estimate_s  actual_s  estimate/actual  measured_by  overhead_s');
  for (const steps of [30, 200]) {
    for (let run = 1; run <= RUNS; run += 1) {
      const { preflight } = await post(`${urls.training}/train`, job(processed.processed_dataset_id, steps, true));
      const estimate = preflight.estimates[0];
      const started = Date.now();
      const { job_id } = await post(`${urls.training}/train`, job(processed.processed_dataset_id, steps, false));
      let row: any;
      do {
        await new Promise((r) => setTimeout(r, 250));
        row = await call(`${urls.training}/jobs/${job_id}`);
      } while (row.status !== 'completed' && row.status !== 'failed');
      if (row.status !== 'completed') throw new Error(`job ${job_id} failed: ${row.error}`);
      const actual = (Date.now() - started) / 1000;
      const wall = estimate.wall_seconds as number;
      console.log(`${String(steps).padStart(5)}  ${run}    ${wall.toFixed(1).padStart(9)}  ${actual.toFixed(1).padStart(8)}  ${(wall / actual).toFixed(2).padStart(15)}  ${String(estimate.measured_by).padEnd(11)}  ${estimate.overhead_seconds ?? '—'}`);
    }
  }
} finally {
  await stack.stop();
  await fs.rm(dataDir, { recursive: true, force: true });
}
