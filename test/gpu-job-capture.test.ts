// The job the GPU check replays (scripts/gpu-check.sh, its `job` part, #37): the real worker of an embedded stack,
// its devices stood in as one CUDA GPU (an nvidia-smi on PATH that lists an H100), runs the tiny model's QA job
// upload → process → LoRA SFT → batch inference → evaluation → f16 GGUF export, and a CORE_PYTHON that records what
// the worker hands the core (test/support/record_core.py) keeps every command line, spec file and serve request.
// They must equal scripts/gpu-job.json, the copy the GPU machine replays without Node, so the two cannot drift:
// after a change in what the worker writes, `UPDATE_GPU_JOB=1 pnpm vitest run test/gpu-job-capture.test.ts`
// rewrites it (and the diff shows what changed).
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_CORE_PYTHON } from '@ftp/core-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, until } from './support/http.ts';
import { QA_PAIRS, trainTinyQa, uploadQaDataset } from './support/qa-job.ts';
import { startStack, stackPorts, type StackProcess, type StackUrls } from './support/stack.ts';
import { tinyModelsDir } from './support/tiny-model.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const FIXTURE = path.join(ROOT, 'scripts/gpu-job.json');
/** What the stood-in nvidia-smi lists: the card the check is planned for. */
const GPU = 'NVIDIA H100 80GB HBM3, 81559';
/** Metrics that need no model of their own: the BERTScore encoder does not travel to the GPU machine (#37). */
const METRICS = ['exact_match', 'f1', 'rouge'];

const { ok } = apiClient(() => ({}));
let work: string;
let dataDir: string;
let modelsDir: string;
let urls: StackUrls;
let stack: StackProcess;

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'ftp-gpu-job-'));
  dataDir = path.join(work, 'data');
  const bin = path.join(work, 'bin');
  await mkdir(bin);
  await writeFile(path.join(bin, 'nvidia-smi'), `#!/bin/sh\necho '${GPU}'\n`);
  await chmod(path.join(bin, 'nvidia-smi'), 0o755);
  const recorder = path.join(bin, 'python');
  const source = await readFile(path.join(ROOT, 'test/support/record_core.py'), 'utf8');
  await writeFile(recorder, `#!${DEFAULT_CORE_PYTHON}\n${source}`);
  await chmod(recorder, 0o755);
  modelsDir = await tinyModelsDir();
  const ports = await stackPorts();
  urls = ports.urls;
  stack = await startStack(
    {
      ...ports.env, DATA_DIR: dataDir, MODELS_DIR: modelsDir, LOG_LEVEL: 'info', PATH: `${bin}:${process.env.PATH}`,
      CORE_PYTHON: recorder, FTP_CORE_RECORD: path.join(work, 'record'),
      // What a GPU worker does in the background after training is not part of the job's path.
      PREPARE_GGUF_AFTER_TRAINING: 'false',
      // Nor is the submit's check of the data (a preflight request to the warm core, as a dry run's), which answers
      // only when the core starts within the bound: the record would differ from run to run.
      SUBMIT_CHECK_MS: '0',
    },
    urls,
  );
}, 300_000);

afterAll(async () => {
  await stack?.stop();
  await rm(work, { recursive: true, force: true });
});

interface Recorded {
  argv: string[];
  spec?: Record<string, unknown>;
  files?: Record<string, string>;
  requests?: Record<string, unknown>[];
}

describe('the job the GPU check replays', () => {
  it('is what the worker hands the core when its device is one CUDA GPU', async () => {
    const workers = (await ok(`${urls.training}/workers`)).workers as { devices: { kind: string; name: string }[] }[];
    expect(workers.flatMap((w) => w.devices).filter((d) => d.kind === 'cuda').map((d) => d.name)).toEqual([GPU.split(',')[0]]);

    const { processed } = await uploadQaDataset(urls, ok);
    const datasetId: string = processed.processed_dataset_id;
    const job = await trainTinyQa(urls, ok, datasetId, 'gpu-check');
    expect(job.status).toBe('completed');
    const jobId: string = job.job_id;
    const conversations = QA_PAIRS.map(([q]) => [{ role: 'user', content: q }]);
    const batch = await ok(`${urls.inference}/inference/batch`, {
      method: 'POST', json: { model_source: 'adapter', job_id: jobId, use_fast_engine: false, max_new_tokens: 16, messages: conversations },
    });
    expect(batch.results).toHaveLength(4);
    const evaluation = await ok(`${urls.inference}/evaluation`, {
      method: 'POST', json: { model_source: 'adapter', job_id: jobId, dataset_id: datasetId, max_new_tokens: 16, metrics: METRICS },
    });
    expect(evaluation.num_samples).toBe(4);
    const created = await ok(`${urls.export}/exports`, { method: 'POST', json: { job_id: jobId, export_type: 'gguf', gguf_quantization: 'f16', destination: ['cloud'] } });
    const details = await until('export', () => ok(`${urls.export}/exports/${jobId}`),
      (d) => d.latest_export?.export_id === created.export_id && d.latest_export.status !== 'running');
    expect(details.latest_export.status).toBe('completed');
    await stack.stop(); // the warm core's stdin closes: its record is whole

    const captured = await capture(jobId, datasetId);
    const commands = captured.steps.map((s) => s.argv[0]);
    expect(commands).toEqual(['train', 'serve', 'merge', 'gguf']);
    expect(captured.steps[1]!.requests!.map((r) => r.op)).toEqual(['generate', 'generate', 'evaluate']);
    const text = `${JSON.stringify(captured, null, 1)}\n`;
    if (process.env.UPDATE_GPU_JOB === '1') await writeFile(FIXTURE, text);
    const committed = await readFile(FIXTURE, 'utf8').catch(() => '');
    expect(text, 'scripts/gpu-job.json is not what the worker writes now: rerun this test with UPDATE_GPU_JOB=1 and commit it').toBe(committed);
  }, 600_000);
});

/** The records in the order the worker made them, with the machine's paths and the run's ids as placeholders, and
 *  the data files the train spec names. */
async function capture(jobId: string, datasetId: string): Promise<{ steps: Recorded[]; files: Record<string, string> }> {
  const folder = path.join(work, 'record');
  const names = (await readdir(folder)).sort();
  const places: [string, string][] = [[dataDir, '{data}'], [modelsDir, '{models}'], [jobId, '{job}'], [datasetId, '{dataset}']];
  // A folder the worker writes whole before renaming it is NAME.part-<its pid> (models/blob-folders.ts).
  const generic = (text: string) => places.reduce((t, [from, to]) => t.split(from).join(to), text).replace(/\.part-\d+/g, '.part-{pid}');
  const steps: Recorded[] = [];
  const files: Record<string, string> = {};
  for (const name of names) {
    const { files: named = {}, ...step } = JSON.parse(await readFile(path.join(folder, name), 'utf8')) as Recorded;
    for (const [file, text] of Object.entries(named)) files[file] = text;
    // A request's id is a fresh uuid each time: the replay numbers them.
    step.requests = step.requests?.map((r, i) => ({ ...r, id: `request-${i + 1}` }));
    if (!step.requests) delete step.requests;
    steps.push(JSON.parse(generic(JSON.stringify(step))) as Recorded);
  }
  return { steps, files: JSON.parse(generic(JSON.stringify(files))) as Record<string, string> };
}
