// The worker-job part of scripts/gpu-check.sh (#31): one job through the real worker of the embedded stack on a
// machine with CUDA, the tiny model being enough (the path is what is checked): upload → process → LoRA SFT (on
// CUDA, bf16) → batch inference and evaluation (the warm ML core on CUDA) → GGUF export, downloaded and read back.
// Prints one line per stage with its time and what proves the device, then `worker-job: PASS|FAIL`.
//   node --import tsx scripts/gpu-job.ts      (CORE_PYTHON: the python with the core's packages; run by gpu-check.sh)
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { apiClient, until } from '../test/support/http.ts';
import { QA_PAIRS, trainTinyQa, uploadQaDataset } from '../test/support/qa-job.ts';
import { startStack, stackPorts, type StackProcess } from '../test/support/stack.ts';
import { tinyModelsDir } from '../test/support/tiny-model.ts';

const { ok } = apiClient(() => ({}));
const failures: string[] = [];
let started = performance.now();

function stage(name: string, detail: string, passed: boolean): void {
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`worker-job: ${passed ? 'ok  ' : 'FAIL'} ${name} (${seconds} s): ${detail}`);
  if (!passed) failures.push(name);
  started = performance.now();
}

/** The job's event log: the SSE stream of a finished job ends by itself. */
async function jobLogs(url: string): Promise<string[]> {
  const text = await (await fetch(url)).text();
  return text.split('\n\n').filter((block) => /^event: log$/m.test(block))
    .map((block) => JSON.parse(/^data: (.*)$/m.exec(block)![1]!).message as string);
}

const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-gpu-job-'));
let stack: StackProcess | undefined;
try {
  const models = await tinyModelsDir();
  const { env, urls } = await stackPorts();
  stack = await startStack({ ...env, DATA_DIR: dataDir, MODELS_DIR: models, LOG_LEVEL: 'info' }, urls);
  const workers = (await ok(`${urls.training}/workers`)).workers as { devices: { kind: string; name?: string }[] }[];
  const gpus = workers.flatMap((w) => w.devices).filter((d) => d.kind === 'cuda');
  stage('stack', `${workers.length} worker, devices ${JSON.stringify(workers.flatMap((w) => w.devices))}`, gpus.length > 0);

  const { upload, processed } = await uploadQaDataset(urls, ok);
  const datasetId: string = processed.processed_dataset_id;
  stage('upload and process', `${upload.num_examples} rows, splits ${processed.splits}`, upload.num_examples === 24);

  const job = await trainTinyQa(urls, ok, datasetId, 'gpu-check');
  const jobId: string = job.job_id;
  const device = (await jobLogs(`${urls.training}/jobs/${jobId}/events`)).find((m) => m.startsWith('training on '));
  stage('LoRA SFT', `${job.status}, eval_loss ${job.metrics?.eval_loss}; "${device}"`,
    job.status === 'completed' && !!device?.startsWith('training on CUDA') && device.includes('bfloat16'));

  const conversations = QA_PAIRS.map(([q]) => [{ role: 'user', content: q }]);
  const batch = await ok(`${urls.inference}/inference/batch`, {
    method: 'POST', json: { model_source: 'adapter', job_id: jobId, use_fast_engine: false, max_new_tokens: 16, messages: conversations },
  });
  const learned = QA_PAIRS.filter(([, answer], i) => (batch.results[i] as string).trim() === answer).length;
  const loaded = /loaded tiny \+ adapter \S+ on (\w+) \((\w+)\)/.exec(stack.output());
  stage('batch inference', `${learned}/4 trained answers; the ML core ${loaded?.[0] ?? 'logged no load'}`,
    learned >= 3 && loaded?.[1] === 'cuda' && loaded[2] === 'bfloat16');

  const evaluation = await ok(`${urls.inference}/evaluation`, {
    method: 'POST', json: { model_source: 'adapter', job_id: jobId, dataset_id: datasetId, task_type: 'qa', max_new_tokens: 16 },
  });
  stage('evaluation', `${evaluation.num_samples} samples, ${JSON.stringify(evaluation.metrics)}`, evaluation.num_samples === 4 && evaluation.metrics.exact_match >= 0.5);

  const created = await ok(`${urls.export}/exports`, { method: 'POST', json: { job_id: jobId, export_type: 'gguf', gguf_quantization: 'f16', destination: ['cloud'] } });
  const details = await until('export', () => ok(`${urls.export}/exports/${jobId}`),
    (d) => d.latest_export?.export_id === created.export_id && d.latest_export.status !== 'running');
  const gguf = Buffer.from(await (await fetch(`${urls.export}/exports/${jobId}/download?type=gguf`)).arrayBuffer());
  stage('GGUF export', `${details.latest_export.status}, ${gguf.length} bytes, magic ${gguf.subarray(0, 4).toString()}`,
    details.latest_export.status === 'completed' && gguf.subarray(0, 4).toString() === 'GGUF');
} catch (err) {
  stage('run', String((err as Error).stack ?? err), false);
} finally {
  if (failures.length && stack) console.log(stack.output().slice(-6000));
  await stack?.stop();
  await fs.rm(dataDir, { recursive: true, force: true });
}
console.log(`worker-job: ${failures.length ? `FAIL (${failures.join(', ')})` : 'PASS'}`);
process.exit(failures.length ? 1 : 0);
