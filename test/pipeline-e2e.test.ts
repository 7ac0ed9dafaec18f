// The whole pipeline through all four services of the embedded stack, over HTTP on real ports, in token
// mode, with a tiny model trained for real: upload → process (with a test split) → train LoRA SFT →
// export the adapter and the GGUF to the blob store and to a hub stand-in → download the GGUF and
// generate with it → batch inference (adapter, merged, base × both engines) → evaluation → delete.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FastEngine } from '../services/worker/src/fast-engine/index.ts';
import { startHubStandin, type HubStandin } from './hub-standin/server.ts';
import { apiClient, until } from './support/http.ts';
import { firstApiKey, startStack, stackPorts, type StackProcess, type StackUrls } from './support/stack.ts';
import { QA_PAIRS, trainTinyQa, uploadQaDataset } from './support/qa-job.ts';
import { tinyModelsDir, TINY_MODEL } from './support/tiny-model.ts';

const HUB_TOKEN = 'hf_e2e_secret_token_1234';

let dataDir: string;
let urls: StackUrls;
let stack: StackProcess;
let hub: HubStandin;
let auth: Record<string, string>;

const { call, ok } = apiClient(() => auth);

async function filesUnder(root: string): Promise<string[]> {
  const entries = await fs.readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-e2e-'));
  hub = await startHubStandin({ token: HUB_TOKEN });
  const ports = await stackPorts();
  urls = ports.urls;
  stack = await startStack(
    { ...ports.env, DATA_DIR: dataDir, MODELS_DIR: await tinyModelsDir(), LOG_LEVEL: 'info', AUTH_MODE: 'token', HF_ENDPOINT: hub.url, FAST_ENGINE_QUANTIZATION: 'f16', FAST_ENGINE_THREADS: '1' },
    urls,
  );
  // Token mode on a fresh data folder: the stack creates one key and prints it once.
  auth = { authorization: `Bearer ${firstApiKey(stack)}` };
}, 300_000);

afterAll(async () => {
  await stack?.stop();
  await hub?.close();
  await fs.rm(dataDir, { recursive: true, force: true });
});

describe('the pipeline, end to end over HTTP', () => {
  it('fine-tunes, exports, serves and evaluates a model, then deletes every trace of it', async () => {
    // 1. upload and process, with a seeded test split
    const { upload, processed } = await uploadQaDataset(urls, ok);
    expect(upload.num_examples).toBe(24);
    const datasetId: string = processed.processed_dataset_id;
    expect(processed.splits).toEqual(['train', 'test']);

    // 2. train LoRA SFT on the tiny model until it has memorised the answers
    const job = await trainTinyQa(urls, ok, datasetId, 'e2e');
    const jobId: string = job.job_id;
    expect(job.status, JSON.stringify(job.error)).toBe('completed');
    expect(Number.isFinite(job.metrics.eval_loss)).toBe(true);

    // 3. export the adapter and the GGUF, to the blob store and to the hub stand-in
    const exportOf = async (body: Record<string, unknown>) => {
      const created = await ok(`${urls.export}/exports`, { method: 'POST', json: { job_id: jobId, ...body } });
      expect(created.success).toBe(true);
      const details = await until('export', () => ok(`${urls.export}/exports/${jobId}`),
        (d) => d.latest_export?.export_id === created.export_id && d.latest_export.status !== 'running');
      expect(details.latest_export.status, details.latest_export.message).toBe('completed');
      return details;
    };
    const adapterExport = await exportOf({ export_type: 'adapter', destination: ['cloud', 'hub'], hub_repo_id: 'e2e/tiny-adapter', hub_token: HUB_TOKEN });
    expect(adapterExport.artifacts.file.adapter).toMatch(/^file:\/\//);
    expect(adapterExport.artifacts.hub.adapter).toBe(`${hub.url}/e2e/tiny-adapter`);
    // What the hub received is byte for byte what training stored.
    const rawAdapter = fileURLToPath(adapterExport.artifacts.raw.adapter);
    const hubAdapter = hub.store.repo('model', 'e2e/tiny-adapter')!;
    const hubFiles = [...hub.store.revision(hubAdapter, 'main')!.files.values()];
    for (const name of ['adapter_config.json', 'adapter_model.safetensors']) {
      const sent = hubFiles.find((f) => f.path === name);
      expect(sent, `${name} on the hub`).toBeDefined();
      expect(Buffer.compare(sent!.content, await fs.readFile(path.join(rawAdapter, name)))).toBe(0);
    }
    const ggufExport = await exportOf({ export_type: 'gguf', gguf_quantization: 'f16', destination: ['cloud', 'hub'], hub_repo_id: 'e2e/tiny-gguf', hub_token: HUB_TOKEN });
    expect(ggufExport.artifacts.hub.gguf).toBe(`${hub.url}/e2e/tiny-gguf`);
    const hubGguf = [...hub.store.revision(hub.store.repo('model', 'e2e/tiny-gguf')!, 'main')!.files.values()].map((f) => f.path);
    expect(hubGguf.some((p) => p.endsWith('.gguf'))).toBe(true);
    expect(hubGguf).toContain('Modelfile');

    // 4. download the GGUF and generate with it, outside the services
    const download = await fetch(`${urls.export}/exports/${jobId}/download?type=gguf`, { headers: auth });
    expect(download.status).toBe(200);
    const ggufFile = path.join(dataDir, 'downloaded.gguf');
    await fs.writeFile(ggufFile, Buffer.from(await download.arrayBuffer()));
    expect((await fs.readFile(ggufFile)).subarray(0, 4).toString()).toBe('GGUF');
    const conversations = QA_PAIRS.map(([q]) => [{ role: 'user' as const, content: q! }]);
    const engine = await FastEngine.create({ gpu: false });
    let downloadedText: string[];
    try {
      downloadedText = (await engine.generate({ modelPath: ggufFile, conversations, options: { maxNewTokens: 16 } })).map((g) => g.text);
    } finally {
      await engine.dispose();
    }

    // 5. batch inference: every model source on both engines gives the same greedy text
    const batch = async (modelSource: string, fast: boolean) =>
      (await ok(`${urls.inference}/inference/batch`, {
        method: 'POST',
        json: {
          model_source: modelSource, use_fast_engine: fast, max_new_tokens: 16, messages: conversations,
          ...(modelSource === 'base' ? { base_model_id: TINY_MODEL } : { job_id: jobId }),
        },
      })).results as string[];
    const texts: Record<string, string[]> = {};
    for (const source of ['adapter', 'merged', 'base']) {
      texts[source] = await batch(source, false);
      expect(await batch(source, true), `${source}: llama.cpp vs transformers`).toEqual(texts[source]);
    }
    expect(texts.merged).toEqual(texts.adapter);
    expect(downloadedText).toEqual(texts.merged);
    expect(texts.base).not.toEqual(texts.adapter);
    // It learned: most questions get their trained answer back.
    const learned = QA_PAIRS.filter(([, answer], i) => texts.adapter![i]!.trim() === answer).length;
    expect(learned).toBeGreaterThanOrEqual(3);

    // 6. evaluation on the test split: a task suite, then explicit metrics
    const qa = await ok(`${urls.inference}/evaluation`, {
      method: 'POST',
      json: { model_source: 'adapter', job_id: jobId, dataset_id: datasetId, task_type: 'qa', max_new_tokens: 16, num_sample_results: 2 },
    });
    expect(qa.num_samples).toBe(4);
    expect(Object.keys(qa.metrics).sort()).toEqual(['exact_match', 'f1']);
    expect(qa.metrics.exact_match).toBeGreaterThanOrEqual(0.5);
    expect(qa.samples).toHaveLength(2);
    expect(qa.samples[0]).toMatchObject({ sample_index: 0, input: [{ role: 'user' }] });
    const explicit = await ok(`${urls.inference}/evaluation`, {
      method: 'POST',
      json: { model_source: 'merged', job_id: jobId, dataset_id: datasetId, metrics: ['rouge', 'bleu'], use_fast_engine: true, max_new_tokens: 16 },
    });
    expect(explicit.warnings).toEqual([]);
    for (const value of Object.values(explicit.metrics).flatMap((v) => (typeof v === 'number' ? [v] : Object.values(v as object)))) {
      expect(Number.isFinite(value)).toBe(true);
    }

    // 7. delete the dataset and the job: nothing of either is left in storage
    const deletedDataset = await ok(`${urls.preprocessing}/datasets/${datasetId}`, { method: 'DELETE' });
    expect(deletedDataset.deleted_resources.length).toBeGreaterThan(0);
    // The two evaluations held the dataset's rows in their samples: they go with it.
    expect(deletedDataset.deleted_resources.filter((r: string) => r.startsWith('evaluations/'))).toHaveLength(2);
    const deletedJob = await ok(`${urls.training}/jobs/${jobId}`, { method: 'DELETE' });
    expect(deletedJob.deleted_resources.some((r: string) => r.endsWith('.gguf'))).toBe(true);
    // Stored files go with the request; the worker drops its local copies (work folder) on its next heartbeat.
    const left = async () => (await Promise.all(['blobs', 'work'].map((d) => filesUnder(path.join(dataDir, d))))).flat().filter((f) => f.includes(jobId) || f.includes(datasetId));
    expect(await until('the worker dropping its copies', left, (files) => files.length === 0, 30_000)).toEqual([]);
    expect((await call(`${urls.export}/exports/${jobId}`)).status).toBe(404);
    expect((await ok(`${urls.export}/exports`)).map((e: { job_id: string }) => e.job_id)).not.toContain(jobId);
    // The hub token never reached a log line.
    expect(stack.output()).not.toContain(HUB_TOKEN);
  }, 900_000);
});
