// Exports end to end on the embedded pieces: a tiny LoRA job trained for real, then its adapter, merged
// model and GGUF exported by the real worker to blob storage and to the hub stand-in, downloaded and
// compared byte for byte; plus every check POST /exports makes, ownership, auth, and what DELETE removes.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as ort from 'onnxruntime-node';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { extract as extractTar, list as listTar } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, userKeySegment } from '@ftp/platform';
import { checkedInject } from '../../../test/contract/openapi-contract.ts';
import { startHubStandin, type HubStandin } from '../../../test/hub-standin/server.ts';
import { loraRequest, qaCsv, startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';
import { buildInferenceApp } from '../../inference/src/app.ts';
import { buildExportApp } from '../src/app.ts';

/** Runs Python in the ML core's environment (where onnx is). */
async function coreScript(script: string, ...args: string[]): Promise<void> {
  const python = fileURLToPath(new URL('../../../core/.venv/bin/python', import.meta.url));
  await promisify(execFile)(python, ['-c', script, ...args]);
}

const HUB_TOKEN = 'standin-hub-token-9182';
let hub: HubStandin;
let h: TrainingHarness;
let app: FastifyInstance;
let alice: Record<string, string>;
let bob: Record<string, string>;
let jobId: string;
let adapterPrefix: string;
let scratch: string;

// Response bodies, read loosely: the contract check has validated their shape already.
type Json = Record<string, any>;

beforeAll(async () => {
  hub = await startHubStandin({ token: HUB_TOKEN });
  h = await startTrainingHarness({ AUTH_MODE: 'token', HF_ENDPOINT: hub.url, HUB_TIMEOUT_MS: '5000', PROGRESS_INTERVAL_S: '1' });
  app = await buildExportApp(h.platform);
  alice = { authorization: `Bearer ${(await h.platform.apiKeys.create('alice', 'a')).key}` };
  bob = { authorization: `Bearer ${(await h.platform.apiKeys.create('bob', 'b')).key}` };
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-export-test-'));
  const dataset = await h.dataset(qaCsv(), {}, alice);
  const submitted = await h.train({ method: 'POST', url: '/train', payload: loraRequest(dataset, { max_steps: 10, logging_steps: 5 }), headers: alice });
  jobId = submitted.json().job_id;
  const job = await h.waitFor(jobId, (j) => j.status === 'completed' || j.status === 'failed', 240_000, alice);
  expect(job.status, JSON.stringify(job.error)).toBe('completed');
  adapterPrefix = `${h.platform.blobs.keyFromUri(job.adapter_path as string)!}/`;
}, 300_000);

afterAll(async () => {
  await app?.close();
  await h?.close();
  await hub?.close();
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

const ex = (options: InjectOptions) => checkedInject('export', app, options);

/** Starts an export and waits until its record is no longer running; returns that record. */
async function exportAndWait(body: Json, headers = alice): Promise<Json> {
  const res = await ex({ method: 'POST', url: '/exports', payload: { job_id: jobId, ...body }, headers });
  expect(res.statusCode, res.body).toBe(200);
  const { export_id: exportId, success, message } = res.json();
  expect(success).toBe(true);
  expect(message).toMatch(/started; follow it in latest_export/);
  // it names what it exports (#39: "export of the merged of job …")
  expect(message).toMatch(/^export of the (adapter|merged model|GGUF file|ONNX model) of job /);
  const deadline = Date.now() + 180_000;
  for (;;) {
    const latest = (await ex({ url: `/exports/${jobId}`, headers })).json().latest_export;
    if (latest?.export_id === exportId && latest.status !== 'running') return latest;
    if (Date.now() > deadline) throw new Error(`export ${exportId} still running: ${JSON.stringify(latest)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function blobBytes(key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await h.platform.blobs.get(key)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The stored adapter: relative path → bytes. */
async function storedAdapter(): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const blob of await h.platform.blobs.list(adapterPrefix)) files.set(blob.key.slice(adapterPrefix.length), await blobBytes(blob.key));
  return files;
}

/** Downloads a file artifact through the API. */
async function download(type: string, headers = alice, variant?: string) {
  return ex({ url: `/exports/${jobId}/download?type=${type}${variant ? `&variant=${variant}` : ''}`, headers });
}

describe('exports of a trained LoRA job', () => {
  it('nothing to download before an export, and no export yet', async () => {
    const res = await download('adapter');
    expect(res.statusCode).toBe(404);
    expect(res.json().detail).toMatch(/adapter file of training job .* not found; make one with POST \/exports/);
    const details = (await ex({ url: `/exports/${jobId}`, headers: alice })).json();
    expect(details).toMatchObject({ job_id: jobId, job_name: 'tiny lora', user_id: 'alice', base_model_id: 'tiny', modality: 'text', latest_export: null });
    expect(details.artifacts.raw.adapter).toBe(details.adapter_path);
  });

  it('adapter → cloud: the raw folder and one .tar.gz that unpacks to the stored adapter, byte for byte', async () => {
    const record = await exportAndWait({ export_type: 'adapter' });
    expect(record, record.message).toMatchObject({ type: 'adapter', status: 'completed', destination: ['cloud'], hub_repo_id: null });
    expect(record.message).toBe('adapter exported to cloud storage (folder and adapter.tar.gz)');
    expect(Date.parse(record.finished_at)).toBeGreaterThanOrEqual(Date.parse(record.started_at));
    const fileUri = h.platform.blobs.uri(`jobs/alice/${jobId}/exports/adapter.tar.gz`);
    expect(record.artifacts).toEqual([
      { type: 'adapter', variant: 'raw', path: h.platform.blobs.uri(adapterPrefix.slice(0, -1)) },
      { type: 'adapter', variant: 'file', path: fileUri },
    ]);
    const details = (await ex({ url: `/exports/${jobId}`, headers: alice })).json();
    expect(details.artifacts.file.adapter).toBe(fileUri);

    const res = await download('adapter');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/octet-stream');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="${jobId}-adapter.tar.gz"`);
    const archive = path.join(scratch, 'adapter.tar.gz');
    await fs.writeFile(archive, res.rawPayload);
    const out = path.join(scratch, 'unpacked');
    await fs.mkdir(out);
    await extractTar({ file: archive, cwd: out });
    const root = path.join(out, `${jobId}-adapter`);
    const stored = await storedAdapter();
    expect([...stored.keys()]).toEqual(expect.arrayContaining(['adapter_config.json', 'adapter_model.safetensors']));
    expect((await fs.readdir(root, { recursive: true })).sort()).toEqual([...stored.keys()].sort());
    for (const [rel, bytes] of stored) expect(Buffer.compare(await fs.readFile(path.join(root, rel)), bytes), rel).toBe(0);
  });

  it('gguf (q8_0) → cloud: a GGUF file with its Ollama Modelfile beside it; GET /jobs shows it', async () => {
    const record = await exportAndWait({ export_type: 'gguf', gguf_quantization: 'q8_0' });
    expect(record.status, record.message).toBe('completed');
    const ggufKey = `jobs/alice/${jobId}/exports/gguf-q8_0/model-q8_0.gguf`;
    expect(record.artifacts).toEqual([{ type: 'gguf', variant: 'file', path: h.platform.blobs.uri(ggufKey) }]);
    const modelfile = (await blobBytes(ggufKey.replace(/model-q8_0\.gguf$/, 'Modelfile'))).toString();
    expect(modelfile).toMatch(/^FROM \.\/model-q8_0\.gguf\nTEMPLATE """/);
    expect(modelfile).toMatch(/PARAMETER stop /);

    const res = await download('gguf');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-disposition']).toBe(`attachment; filename="${jobId}-model-q8_0.gguf"`);
    expect(res.rawPayload.subarray(0, 4).toString()).toBe('GGUF');
    expect(Buffer.compare(res.rawPayload, await blobBytes(ggufKey))).toBe(0);

    const job = (await h.train({ url: `/jobs/${jobId}`, headers: alice })).json();
    expect(job.gguf_path).toBe(h.platform.blobs.uri(ggufKey));
    expect(job.artifacts.file.gguf).toBe(job.gguf_path);
    expect(job.latest_export).toMatchObject({ export_id: record.export_id, type: 'gguf', status: 'completed' });
  }, 240_000);

  it('a GGUF export says on its record what it does and for how long, every interval, while it runs (#39)', async () => {
    // The conversion held open for 4 s (the core's test hook), the interval 1 s: at least three updates, growing.
    process.env.FTCORE_TEST_HOLD = 'gguf=4';
    try {
      const res = await ex({ method: 'POST', url: '/exports', payload: { job_id: jobId, export_type: 'gguf', gguf_quantization: 'f16' }, headers: alice });
      const { export_id: exportId } = res.json();
      const seen: Json[] = [];
      for (;;) {
        const latest = (await ex({ url: `/exports/${jobId}`, headers: alice })).json().latest_export;
        if (latest?.export_id === exportId && latest.status !== 'running') {
          expect(latest.status, latest.message).toBe('completed');
          expect(latest.progress).toBeNull();
          break;
        }
        if (latest?.progress && JSON.stringify(latest.progress) !== JSON.stringify(seen.at(-1)?.progress)) seen.push(latest);
        await new Promise((r) => setTimeout(r, 100));
      }
      const converting = seen.filter((r) => /^making the GGUF \(f16\) of job \S+ for llama\.cpp/.test(r.progress.stage));
      expect(converting.length, JSON.stringify(seen)).toBeGreaterThanOrEqual(3);
      const elapsed = converting.map((r) => r.progress.elapsed_seconds);
      expect(elapsed).toEqual([...elapsed].sort((a, b) => a - b));
      expect(elapsed.at(-1)!).toBeGreaterThan(elapsed[0]!);
      expect(converting.at(-1)!.message).toMatch(/: \d+ s so far$/);
    } finally {
      delete process.env.FTCORE_TEST_HOLD;
    }
  });

  it('merged → cloud: the merge made for the GGUF is stored as the raw folder, and archived', async () => {
    const record = await exportAndWait({ export_type: 'merged' });
    expect(record.status, record.message).toBe('completed');
    const rawKey = `jobs/alice/${jobId}/merged`;
    expect(record.artifacts).toEqual([
      { type: 'merged', variant: 'raw', path: h.platform.blobs.uri(rawKey) },
      { type: 'merged', variant: 'file', path: h.platform.blobs.uri(`jobs/alice/${jobId}/exports/merged.tar.gz`) },
    ]);
    const stored = (await h.platform.blobs.list(`${rawKey}/`)).map((b) => b.key.slice(rawKey.length + 1));
    expect(stored).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json', 'chat_template.jinja']));
    const archive = path.join(scratch, 'merged.tar.gz');
    await fs.writeFile(archive, (await download('merged')).rawPayload);
    const entries: string[] = [];
    await listTar({ file: archive, onReadEntry: (e) => void entries.push(e.path) });
    expect(entries.sort()).toEqual(stored.map((f) => `${jobId}-merged/${f}`).sort());
  }, 240_000);

  it('onnx → cloud: transformers.js’s layout; fp32 gives transformers’ tokens in onnxruntime-node, each variant’s agreement is on the record; one variant downloads alone', async () => {
    const record = await exportAndWait({ export_type: 'onnx' });
    expect(record.status, record.message).toBe('completed');
    const rawKey = `jobs/alice/${jobId}/exports/onnx`;
    expect(record.artifacts).toEqual([
      { type: 'onnx', variant: 'raw', path: h.platform.blobs.uri(rawKey) },
      { type: 'onnx', variant: 'file', path: h.platform.blobs.uri(`jobs/alice/${jobId}/exports/onnx.tar.gz`) },
    ]);
    const stored = (await h.platform.blobs.list(`${rawKey}/`)).map((b) => b.key.slice(rawKey.length + 1));
    expect(stored).toEqual(expect.arrayContaining([
      'onnx/model.onnx', 'onnx/model_fp16.onnx', 'onnx/model_q4.onnx', 'onnx/model_q4f16.onnx',
      'config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja',
    ]));
    expect(record.parity.map((p: Json) => p.variant)).toEqual(['fp32', 'fp16', 'q4', 'q4f16']);
    expect(record.parity[0]).toEqual({ variant: 'fp32', agreement: 1, first_divergence: null, prompts: 4, tokens_per_prompt: 32, execution_provider: 'cpu', usable: true });
    for (const p of record.parity) expect(p.usable).toBe(p.agreement >= 0.5);
    expect(record.message).toMatch(/^onnx exported to cloud storage \(folder and onnx\.tar\.gz\); greedy agreement with transformers: fp32 100%, fp16 \d+%/);
    // the files offered for download, each as the export measured it (#54); an export leaves the job's updated_at
    const details = (await ex({ url: `/exports/${jobId}`, headers: alice })).json();
    expect(details.onnx_variants).toEqual(record.parity);
    expect((await ex({ url: '/exports', headers: alice })).json().find((j: Json) => j.job_id === jobId).onnx_variants).toEqual(record.parity);
    const job = (await h.train({ url: `/jobs/${jobId}`, headers: alice })).json();
    expect(Date.parse(job.updated_at)).toBeLessThan(Date.parse(record.started_at));
    expect(Date.parse(job.finished_at)).toBeGreaterThanOrEqual(Date.parse(job.started_at));

    const q4 = await download('onnx', alice, 'q4');
    expect(q4.statusCode, q4.body).toBe(200);
    expect(q4.headers['content-disposition']).toBe(`attachment; filename="${jobId}-model_q4.onnx"`);
    expect(Buffer.compare(q4.rawPayload, await blobBytes(`${rawKey}/onnx/model_q4.onnx`))).toBe(0);
    const session = await ort.InferenceSession.create(q4.rawPayload);
    expect(session.inputNames.slice(0, 2)).toEqual(['input_ids', 'attention_mask']);
    await session.release();
    const archive = path.join(scratch, 'onnx.tar.gz');
    await fs.writeFile(archive, (await download('onnx')).rawPayload);
    const entries: string[] = [];
    await listTar({ file: archive, onReadEntry: (e) => void entries.push(e.path) });
    expect(entries.sort()).toEqual(stored.map((f) => `${jobId}-onnx/${f}`).sort());
    expect((await download('merged', alice, 'q4')).statusCode).toBe(422);
  }, 240_000);

  it('transformers.js loads the ONNX export on its own (no hub): transformers’ ids and greedy tokens, the server’s batch inference text', async () => {
    // The worker's copy of the export, with the reference beside it: transformers' ids through the job's chat
    // template, and its greedy tokens (end-of-turn not stopping it; transformers.js stops there, so up to it).
    const folder = path.join(h.platform.config.dataDir, 'work', jobId, 'models', 'onnx');
    const reference = JSON.parse(await fs.readFile(path.join(folder, 'reference.json'), 'utf8')) as { prompts: Array<{ messages: Json[]; prompt_ids: number[]; tokens: number[] }> };
    const { AutoModelForCausalLM, AutoTokenizer, env } = await import('@huggingface/transformers');
    env.allowRemoteModels = false;
    env.localModelPath = `${folder}/`;
    const tokenizer = await AutoTokenizer.from_pretrained('model');
    const model = await AutoModelForCausalLM.from_pretrained('model', { dtype: 'fp32', device: 'cpu' });
    const eos = [JSON.parse(await fs.readFile(path.join(folder, 'model', 'generation_config.json'), 'utf8')).eos_token_id].flat();
    expect(reference.prompts).toHaveLength(4);
    // What the server answers for the same conversations, on transformers (the merged model, greedy)
    const inference = await buildInferenceApp(h.platform);
    const batch = await inference.inject({
      method: 'POST', url: '/inference/batch', headers: alice,
      payload: { model_source: 'merged', job_id: jobId, use_fast_engine: false, max_new_tokens: 32, temperature: 0, messages: reference.prompts.map((p) => p.messages) },
    });
    await inference.close();
    expect(batch.statusCode, batch.body).toBe(200);
    const served = (batch.json() as { results: string[] }).results;
    for (const [index, prompt] of reference.prompts.entries()) {
      const input = tokenizer.apply_chat_template(prompt.messages as never, { add_generation_prompt: true, return_dict: true }) as unknown as { input_ids: { dims: number[]; tolist(): number[][] } };
      expect(input.input_ids.tolist()[0]!.map(Number)).toEqual(prompt.prompt_ids);
      const out = (await model.generate({ ...(input as object), max_new_tokens: 32, do_sample: false })) as unknown as { tolist(): bigint[][] };
      const tokens = out.tolist()[0]!.slice(prompt.prompt_ids.length).map(Number);
      expect(tokens).toEqual(prompt.tokens.slice(0, tokens.length));
      expect(tokens.length === 32 || eos.includes(tokens.at(-1)), `stopped after ${tokens.length} tokens at ${tokens.at(-1)}`).toBe(true);
      expect(tokenizer.decode(tokens, { skip_special_tokens: true }).trim(), `prompt ${index + 1}`).toBe(served[index]!.trim());
    }
    await model.dispose();
  }, 120_000);

  it('onnx → hub: the repository gets the same layout, read back byte for byte', async () => {
    const before = hub.store.commits.length;
    const record = await exportAndWait({ export_type: 'onnx', destination: ['hub'], hub_repo_id: 'alice/tiny-onnx', hub_token: HUB_TOKEN });
    expect(record.status, record.message).toBe('completed');
    const url = `${hub.url}/alice/tiny-onnx`;
    expect(record.artifacts).toEqual([{ type: 'onnx', variant: 'hub', path: url }]);
    const rawKey = `jobs/alice/${jobId}/exports/onnx`;
    const stored = (await h.platform.blobs.list(`${rawKey}/`)).map((b) => b.key.slice(rawKey.length + 1)).sort();
    expect(hub.store.commits.slice(before)).toEqual([expect.objectContaining({ id: 'alice/tiny-onnx', paths: stored })]);
    const res = await fetch(`${url}/resolve/main/onnx/model_q4.onnx`, { headers: { authorization: `Bearer ${HUB_TOKEN}` } });
    expect(Buffer.compare(Buffer.from(await res.arrayBuffer()), await blobBytes(`${rawKey}/onnx/model_q4.onnx`))).toBe(0);
  }, 120_000);

  it('onnx_variants: an export of fp32 and q4 alone writes those two files in a folder of its own, checks them, and is what is offered since', async () => {
    const refused = await ex({ method: 'POST', url: '/exports', payload: { job_id: jobId, export_type: 'adapter', onnx_variants: ['q4'] }, headers: alice });
    expect(refused.statusCode, refused.body).toBe(422);
    expect(refused.json().detail).toEqual([expect.objectContaining({ loc: ['body', 'onnx_variants'], msg: expect.stringMatching(/leave it out for export_type adapter, or set export_type onnx/) })]);
    const record = await exportAndWait({ export_type: 'onnx', onnx_variants: ['q4'] });
    expect(record.status, record.message).toBe('completed');
    const rawKey = `jobs/alice/${jobId}/exports/onnx-q4`;
    expect(record.artifacts).toContainEqual({ type: 'onnx', variant: 'raw', path: h.platform.blobs.uri(rawKey) });
    const stored = (await h.platform.blobs.list(`${rawKey}/onnx/`)).map((b) => b.key.slice(rawKey.length + 1)).sort();
    expect(stored).toEqual(['onnx/model.onnx', 'onnx/model_q4.onnx']);
    expect(record.parity.map((p: Json) => p.variant)).toEqual(['fp32', 'q4']);
    expect(record.parity[0]).toMatchObject({ variant: 'fp32', agreement: 1, first_divergence: null });
    expect(record.message).toMatch(/greedy agreement with transformers: fp32 100%, q4 \d+%/);
    const details = (await ex({ url: `/exports/${jobId}`, headers: alice })).json();
    expect(details.onnx_variants).toEqual(record.parity);
    const q4 = await download('onnx', alice, 'q4');
    expect(Buffer.compare(q4.rawPayload, await blobBytes(`${rawKey}/onnx/model_q4.onnx`))).toBe(0);
    // fp16 was not asked for this time, and the earlier export's file is not offered in its place
    expect((await download('onnx', alice, 'fp16')).statusCode).toBe(404);
  }, 240_000);

  it('an ONNX export whose fp32 model does not give transformers’ tokens fails, saying where, and stores nothing', async () => {
    // The worker keeps the export it made; one weight of it changed (one number of the embedding of the token every
    // check prompt starts with), the next export of the job reuses that file and must catch it.
    const folder = path.join(h.platform.config.dataDir, 'work', jobId, 'models', 'onnx');
    const firstToken = (JSON.parse(await fs.readFile(path.join(folder, 'reference.json'), 'utf8')) as { prompts: Array<{ prompt_ids: number[] }> }).prompts[0]!.prompt_ids[0]!;
    await coreScript(`
import onnx, sys
from onnx import numpy_helper
model = onnx.load(sys.argv[1])
weight = next(t for t in model.graph.initializer if t.name.endswith('embed_tokens.weight'))
values = numpy_helper.to_array(weight).copy()
values[int(sys.argv[2]), 0] = 1000.0
weight.CopyFrom(numpy_helper.from_array(values, weight.name))
onnx.save(model, sys.argv[1])
`, path.join(folder, 'model', 'onnx', 'model.onnx'), String(firstToken));
    const record = await exportAndWait({ export_type: 'onnx' });
    expect(record.status).toBe('failed');
    expect(record.message).toMatch(/^the fp32 ONNX model does not give transformers' greedy tokens \(it diverges at prompt \d, token \d+\), so the export is not stored/);
    expect(record.parity[0]).toMatchObject({ variant: 'fp32', first_divergence: { prompt: expect.any(Number), token: expect.any(Number) } });
    expect(record.parity[0].agreement).toBeLessThan(1);
    expect(record.artifacts).toEqual([]);
  }, 240_000);

  it('adapter → hub: creates the repo, one commit, the files read back from the hub are the stored ones', async () => {
    const before = hub.store.commits.length;
    const record = await exportAndWait({ export_type: 'adapter', destination: ['hub'], hub_repo_id: 'alice/tiny-adapter', hub_token: HUB_TOKEN });
    expect(record.status, record.message).toBe('completed');
    const url = `${hub.url}/alice/tiny-adapter`;
    expect(record).toMatchObject({ destination: ['hub'], hub_repo_id: 'alice/tiny-adapter', artifacts: [{ type: 'adapter', variant: 'hub', path: url }] });
    expect(record.message).toBe(`adapter exported to ${url}`);
    const stored = await storedAdapter();
    expect(hub.store.commits.slice(before)).toEqual([expect.objectContaining({ id: 'alice/tiny-adapter', paths: [...stored.keys()].sort() })]);
    for (const [rel, bytes] of stored) {
      const res = await fetch(`${url}/resolve/main/${rel}`, { headers: { authorization: `Bearer ${HUB_TOKEN}` } });
      expect(res.status, rel).toBe(200);
      expect(Buffer.compare(Buffer.from(await res.arrayBuffer()), bytes), rel).toBe(0);
    }
    const details = (await ex({ url: `/exports/${jobId}`, headers: alice })).json();
    expect(details.artifacts.hub.adapter).toBe(url);
    // Earlier exports' artifacts stay.
    expect(details.artifacts.file).toMatchObject({ adapter: expect.any(String), merged: expect.any(String), gguf: expect.any(String) });
  });

  it('hub with a wrong token → failed with a sentence to act on; no token in the message, rows or logs', async () => {
    const wrong = 'wrong-token-SECRET-4711';
    const record = await exportAndWait({ export_type: 'adapter', destination: ['hub'], hub_repo_id: 'alice/other', hub_token: wrong });
    expect(record.status).toBe('failed');
    expect(record.message).toMatch(new RegExp(`^the model hub at ${hub.url} refused the hub_token \\(HTTP 401.*\\); check that the token is valid and export again$`));
    expect(record.finished_at).not.toBeNull();
    expect(record.artifacts).toEqual([]);
    const places = [
      JSON.stringify(await h.platform.db.query('SELECT * FROM exports')),
      JSON.stringify(await h.platform.db.query('SELECT * FROM training_jobs')),
      h.platform.logText(),
    ];
    for (const text of places) {
      expect(text).not.toContain(wrong);
      expect(text).not.toContain(HUB_TOKEN);
    }
  });

  it('GET /exports lists the caller’s jobs with artifacts, without export records; GET /jobs/{id} has latest_export', async () => {
    const list = (await ex({ url: '/exports', headers: alice })).json() as Json[];
    expect(list.map((j) => j.job_id)).toEqual([jobId]);
    expect(list[0]).not.toHaveProperty('latest_export');
    expect(list[0]!.artifacts.hub.adapter).toBe(`${hub.url}/alice/tiny-adapter`);
    const job = (await h.train({ url: `/jobs/${jobId}`, headers: alice })).json();
    expect(job.latest_export).toMatchObject({ status: 'failed', hub_repo_id: 'alice/other' });
    const jobs = (await h.train({ url: '/jobs', headers: alice })).json().jobs as Json[];
    expect(jobs.find((j) => j.job_id === jobId)!.latest_export.export_id).toBe(job.latest_export.export_id);
  });
});

/** A training job row of alice's in a given state, without training anything. */
async function fakeJob(status: 'queued' | 'failed' | 'completed', artifacts?: Json, modality: 'text' | 'vision' = 'text'): Promise<string> {
  const id = newId('job');
  await h.platform.jobs.insert({
    job_id: id, user_id: 'alice', job_name: 'fake', processed_dataset_id: 'pd_x', base_model_id: 'tiny', modality,
    training_config: { method: 'Full', provider: 'local', base_model_id: 'tiny' }, blob_prefix: `jobs/${userKeySegment('alice')}/${id}/`, tracker_url: null,
  });
  if (status !== 'queued') await h.platform.jobs.update(id, { status, ...(artifacts ? { artifacts: artifacts as never } : {}) });
  return id;
}

describe('POST /exports checks, ownership and auth', () => {
  const post = (body: Json, headers: Record<string, string> = alice) => ex({ method: 'POST', url: '/exports', payload: body, headers });

  it('a queued or failed job → 409 saying it must complete', async () => {
    const queued = await fakeJob('queued');
    const res = await post({ job_id: queued });
    expect(res.statusCode).toBe(409);
    expect(res.json().detail).toBe(`training job ${queued} is queued; only a completed job can be exported (wait until it has completed, or export one of its checkpoints with checkpoint_step)`);
    const failed = await fakeJob('failed');
    expect((await post({ job_id: failed, export_type: 'gguf' })).json().detail).toMatch(/is failed; only a completed job can be exported \(train it again, or export one of its checkpoints with checkpoint_step\)/);
    // …and a checkpoint it does not have is a 422 that says it has none.
    const ofCheckpoint = await post({ job_id: failed, export_type: 'merged', checkpoint_step: 10 });
    expect(ofCheckpoint.statusCode).toBe(422);
    expect(ofCheckpoint.json().detail[0]).toMatchObject({ loc: ['body', 'checkpoint_step'], msg: expect.stringContaining('it has no stored checkpoint') });
  });

  it('adapter of a Full job → 409 pointing to merged or gguf', async () => {
    const full = await fakeJob('completed', { file: {}, raw: { merged: 'file:///x' }, hub: {} });
    const res = await post({ job_id: full, export_type: 'adapter' });
    expect(res.statusCode).toBe(409);
    expect(res.json().detail).toMatch(/trained the whole model, so it has no adapter; use export_type merged or gguf/);
  });

  it('gguf or onnx of a vision job → 409 saying what covers it', async () => {
    const vision = await fakeJob('completed', { file: {}, raw: { merged: 'file:///x' }, hub: {} }, 'vision');
    for (const [type, name] of [['gguf', 'GGUF'], ['onnx', 'ONNX']] as const) {
      const res = await post({ job_id: vision, export_type: type });
      expect(res.statusCode).toBe(409);
      expect(res.json().detail).toMatch(new RegExp(`trained a vision model; ${name} export covers text models only .*use export_type adapter or merged`));
    }
  });

  it('GET /exports leaves out completed jobs that exported nothing (training\'s own folders are no download)', async () => {
    const trainedOnly = await fakeJob('completed', { file: {}, raw: { adapter: 'file:///x' }, hub: {} });
    const withGguf = await fakeJob('completed', { file: { gguf: 'file:///x.gguf' }, raw: { adapter: 'file:///x' }, hub: {} });
    const listed = ((await ex({ url: '/exports', headers: alice })).json() as Json[]).map((j) => j.job_id);
    expect(listed).toContain(withGguf);
    expect(listed).not.toContain(trainedOnly);
  });

  it('hub without hub_repo_id and hub_token → 422 naming both', async () => {
    const res = await post({ job_id: jobId, destination: ['cloud', 'hub'] });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail.map((d: Json) => d.loc.join('.')).sort()).toEqual(['body.hub_repo_id', 'body.hub_token']);
    expect((await post({ destination: ['cloud'] })).json().detail[0].loc).toEqual(['body', 'job_id']);
    const badType = await download('everything');
    expect(badType.statusCode).toBe(422);
    expect(badType.json().detail[0].loc).toEqual(['query', 'type']);
  });

  it("bob gets 404 for alice's job on every endpoint, and an empty list", async () => {
    expect((await post({ job_id: jobId }, bob)).statusCode).toBe(404);
    expect((await ex({ url: `/exports/${jobId}`, headers: bob })).statusCode).toBe(404);
    expect((await download('adapter', bob)).statusCode).toBe(404);
    expect((await ex({ url: '/exports', headers: bob })).json()).toEqual([]);
    expect((await post({ job_id: 'job_unknown' })).json().detail).toBe('training job "job_unknown" not found');
  });

  it('401 without a bearer token or with a bad one, on every endpoint', async () => {
    const calls: InjectOptions[] = [
      { method: 'POST', url: '/exports', payload: { job_id: jobId } },
      { url: '/exports' },
      { url: `/exports/${jobId}` },
      { url: `/exports/${jobId}/download?type=adapter` },
    ];
    for (const call of calls) {
      expect((await ex(call)).statusCode, `${call.method ?? 'GET'} ${call.url}`).toBe(401);
      expect((await ex({ ...call, headers: { authorization: 'Bearer nope' } })).statusCode).toBe(401);
    }
  });

  it('DELETE /jobs/{id} is 409 while an export of the job runs', async () => {
    const job = await fakeJob('completed', { file: {}, raw: { adapter: 'file:///x' }, hub: {} });
    const exportId = newId('exp');
    await h.platform.exports.insert({ export_id: exportId, job_id: job, user_id: 'alice', type: 'adapter', destination: ['cloud'], hub_repo_id: null, gguf_quantization: null, message: 'queued' });
    const res = await h.train({ method: 'DELETE', url: `/jobs/${job}`, headers: alice });
    expect(res.statusCode).toBe(409);
    expect(res.json().detail).toMatch(/an export of job .* is running/);
    await h.platform.exports.update(exportId, { status: 'failed', message: 'x', finished_at: new Date() });
    expect((await h.train({ method: 'DELETE', url: `/jobs/${job}`, headers: alice })).statusCode).toBe(200);
  });
});

describe('a training job with export_config destination hub', () => {
  it('needs a hub_token (422), then publishes the adapter when it completes, followed in latest_export', async () => {
    const dataset = await h.dataset(qaCsv(), {}, alice);
    const toHub = { export_config: { destination: 'hub', hub_repo_id: 'alice/trained-to-hub' } };
    const missing = await h.train({ method: 'POST', url: '/train', payload: loraRequest(dataset, { max_steps: 3 }, toHub), headers: alice });
    expect(missing.statusCode).toBe(422);
    expect(missing.json().detail[0].loc).toEqual(['body', 'hub_token']);

    const submitted = await h.train({ method: 'POST', url: '/train', payload: { ...loraRequest(dataset, { max_steps: 3 }, toHub), hub_token: HUB_TOKEN }, headers: alice });
    expect(submitted.statusCode, submitted.body).toBe(200);
    const id = submitted.json().job_id as string;
    const job = await h.waitFor(id, (j) => j.status === 'failed' || (j.latest_export as Json | null)?.status === 'completed', 240_000, alice);
    expect(job.status, JSON.stringify(job.error)).toBe('completed');
    expect(job.latest_export).toMatchObject({ type: 'adapter', destination: ['hub'], hub_repo_id: 'alice/trained-to-hub' });
    const repo = hub.store.repo('model', 'alice/trained-to-hub')!;
    const files = [...hub.store.revision(repo, 'main')!.files.keys()];
    expect(files).toEqual(expect.arrayContaining(['adapter_config.json', 'adapter_model.safetensors']));
    expect((job.artifacts as Json).hub.adapter).toBe(`${hub.url}/alice/trained-to-hub`);
    // The token stayed in memory: not in the job's row, its stored config, or any export row.
    const rows = JSON.stringify(await h.platform.db.query('SELECT * FROM training_jobs t JOIN exports e USING (job_id) WHERE job_id = $1', [id]));
    expect(rows).not.toContain(HUB_TOKEN);
  }, 300_000);
});

describe('deleting the job', () => {
  it('removes its exported files and export records', async () => {
    const res = await h.train({ method: 'DELETE', url: `/jobs/${jobId}`, headers: alice });
    expect(res.statusCode, res.body).toBe(200);
    const deleted = res.json().deleted_resources as string[];
    for (const file of ['exports/adapter.tar.gz', 'exports/merged.tar.gz', 'exports/gguf-q8_0/model-q8_0.gguf', 'exports/gguf-q8_0/Modelfile', 'merged/config.json']) {
      expect(deleted.some((r) => r.endsWith(`/${jobId}/${file}`)), file).toBe(true);
    }
    expect(await h.platform.blobs.list(`jobs/alice/${jobId}/`)).toEqual([]);
    expect(await h.platform.db.query('SELECT * FROM exports WHERE job_id = $1', [jobId])).toEqual([]);
    expect((await ex({ url: `/exports/${jobId}`, headers: alice })).statusCode).toBe(404);
  });
});
