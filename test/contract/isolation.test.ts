// Isolation between users, over every operation of every service: the embedded stack in JWT mode with two users, A
// and B. A creates one of everything that has an id and can exist without a worker (an upload, a processed dataset,
// a training job, /v1 files, a fine-tuning job and a failed one, with the processed dataset it made, an upload in parts,
// a batch, an evaluation with benchmarks (queued), a webhook endpoint and the delivery of the failed job's event to it,
// and on the Tinker-compatible service a session, a training run (queued), a base-model sampler and the run's first
// future); then B calls
// every operation read from openapi/*.json (so a new endpoint cannot be forgotten) with A's ids in its path and body:
// 404 everywhere (on /v1 OpenAI's error body), and no answer of B's, whatever its status, holds any of A's ids or
// strings beyond what B's own request sent. Then every request again with no credential: 401 (but /health and the
// tinker SDK's /api/v1/healthz), no blob stored. Afterwards A reads everything again: all there, unchanged.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_NAMES, type ServiceName } from '@ftp/schema';
import { startStack, stackPorts, type StackProcess, type StackUrls } from '../support/stack.ts';
import { tinyModelsDir, TINY_MODEL } from '../support/tiny-model.ts';
import { encodeForwardBackwardRequest } from '../../services/tinker/src/wire/proto.ts';

const OPENAPI_DIR = fileURLToPath(new URL('../../openapi/', import.meta.url));
const JWT_SECRET = 'isolation-test-secret-of-32-chars-or-more';
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
const RUN = randomBytes(4).toString('hex');
/** Every string of A's below holds this, so nothing of B's or of the stack's can contain one by chance. */
const MARK = `alpha${RUN}`;
const USER_A = `isolation-a-${RUN}`;
const USER_B = `isolation-b-${RUN}`;
const A_TEXT = {
  datasetName: `${MARK}-processed`,
  jobName: `${MARK}-job`,
  uploadName: `${MARK}-upload.csv`,
  question: `${MARK} what color is the sky`,
  fileName: `${MARK}-chat.jsonl`,
  chatLine: `${MARK} says hello`,
  suffix: `${MARK}-ft`,
  badFileName: `${MARK}-bad.jsonl`,
  webhookName: `${MARK}-hooks`,
  webhookUrl: `https://hooks.example.com/${MARK}`,
};

type Json = Record<string, any>;

interface Operation {
  service: ServiceName;
  method: string;
  template: string;
  /** `METHOD /path`, the key of the tables below. */
  key: string;
  pathParams: string[];
  requiredQuery: string[];
  bodyTypes: string[];
}

/** A's ids, by kind. Uploads and /v1 files are one kind (a /v1 file is an upload), and so are training and
 *  fine-tuning jobs: each id is tried wherever its kind is taken, through either surface. */
interface AIds {
  raw: string[];
  processed: string[];
  jobs: string[];
  models: string[];
  events: string[];
  /** A's upload in parts, pending, and its one part. */
  uploads: string[];
  parts: string[];
  /** A's batch, validating (no worker takes it). */
  batches: string[];
  /** A's evaluation with benchmarks, queued (no worker takes it). */
  evaluations: string[];
  /** A's webhook endpoint, and the delivery of its failed job's event to it. */
  webhooks: string[];
  deliveries: string[];
  /** Tinker: A's session; its training run by model id (`<session>:train:0`) and by run id (`job_…`), queued (no
   *  worker takes it); its base-model sampler (`<session>:sample:0`); and the run's create_model future. */
  tinkerSessions: string[];
  tinkerModels: string[];
  tinkerRuns: string[];
  samplers: string[];
  futures: string[];
}

/** B's own resources, for requests that must name one of B's besides one of A's. */
interface BIds {
  processedDatasetId: string;
  fileId: string;
  /** B's own tinker session, where a request names a session besides A's checkpoint. */
  tinkerSessionId: string;
}

/** What B sends besides the URL, and what it must get back. */
interface Variant {
  body?: unknown;
  form?: () => FormData;
  /** A body of bytes in a media type of its own (forward_backward's protobuf). */
  raw?: { bytes: Uint8Array; type: string };
  /** The answer B must get: 404 when the request names anything of A's. */
  status: number;
  check?: (body: any) => void;
}

// ---- The tables: what B sends where the documents alone cannot say. ----

/** Path parameter name → A's ids it is filled with (every one is tried). */
const pathValues = (a: AIds): Record<string, string[]> => ({
  processed_dataset_id: a.processed,
  job_id: a.jobs,
  fine_tuning_job_id: a.jobs,
  file_id: a.raw,
  model: a.models,
  upload_id: a.uploads,
  batch_id: a.batches,
  evaluation_id: a.evaluations,
  // A comparison is written only once a worker has run it: A has none here (B's 404 still shows nothing of A's).
  comparison_id: ['cmp_000000000000000000000000'],
  // A sweep is accepted once a worker has made its largest trial's pre-flight: A has none here either.
  sweep_id: ['sweep_000000000000000000000000'],
  // A's jobs store no checkpoint without a worker, so A has none to share (test/openai-checkpoint-permissions.test.ts
  // shares a stored one between users); B is still refused at names of A's jobs.
  fine_tuned_model_checkpoint: a.models.map((model) => `${model}:ckpt-step-1`),
  permission_id: ['cp_000000000000000000000000'],
  webhook_endpoint_id: a.webhooks,
  delivery_id: a.deliveries,
  session_id: a.tinkerSessions,
  sampler_id: a.samplers,
  run_id: a.tinkerRuns,
});

/** Required query parameter name → the value sent (no id is taken by query). */
const QUERY_VALUES: Record<string, string> = { type: 'adapter' };

const csvOf = (rows: string[][]) => ['question,answer', ...rows.map((r) => r.map((c) => `"${c}"`).join(','))].join('\n');
const chatLine = (user: string, assistant: string) => JSON.stringify({ messages: [{ role: 'user', content: user }, { role: 'assistant', content: assistant }] });
const form = (fields: Record<string, string>, file: { text: string; name: string }) => () => {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.append(name, value);
  data.append('file', new Blob([file.text]), file.name);
  return data;
};
const B_CSV = { text: csvOf([['b question one', 'b answer'], ['b question two', 'b answer']]), name: 'b-upload.csv' };
const B_JSONL = { text: [chatLine('b hi', 'b hello'), chatLine('b bye', 'b goodbye')].join('\n'), name: 'b-chat.jsonl' };
const FIELD_MAPPINGS = { user_field: { type: 'column', value: 'question' }, assistant_field: { type: 'column', value: 'answer' } };
const TRAINING_CONFIG = { base_model_id: TINY_MODEL, provider: 'local', method: 'LoRA' };

/** OpenAI's 400 for a training or validation file that is not the caller's: the answer the SDKs expect for an unknown
 *  file id in a job request (a body field, not a resource of the URL), the same for a file of another user as for none
 *  at all. Anything but exactly this (a 200, a 404, another code or param) fails. */
const fileNotFound = (param: string): Pick<Variant, 'status' | 'check'> => ({
  status: 404,
  check: (body) => expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'not_found', message: expect.stringContaining(`${param} file`) }),
});

/** `METHOD /path` → B's requests, for every operation with a request body. Each JSON body is minimal and valid and
 *  names A's ids wherever the body takes an id (and B's own where it needs a second one); a multipart upload is B's
 *  own fresh file, which makes a resource of B's. */
/** A score_model grader whose judge is `model`: a model of A's, named by B, is a 404 wherever a grader is read. */
const judgedBy = (model: string) => ({ type: 'score_model', name: 'judge', model, input: [{ role: 'user', content: 'Rate {{sample.output_text}}' }] });

const BODIES: Record<string, (a: AIds, b: BIds) => Variant[]> = {
  'POST /datasets/upload': () => [{ form: form({}, B_CSV), status: 200 }],
  'POST /datasets/process': (a) =>
    a.raw.map((dataset_id) => ({ body: { dataset_name: 'b-processed', dataset_id, config: { field_mappings: FIELD_MAPPINGS } }, status: 404 })),
  'POST /train': (a, b) => [
    ...a.processed.map((processed_dataset_id) => ({ body: { processed_dataset_id, training_config: TRAINING_CONFIG }, status: 404 })),
    ...a.jobs.map((from_job) => ({ body: { processed_dataset_id: b.processedDatasetId, training_config: { ...TRAINING_CONFIG, from_job } }, status: 404 })),
    ...a.models.map((model) => ({ body: { processed_dataset_id: b.processedDatasetId, training_config: { ...TRAINING_CONFIG, trainer_type: 'grpo', reward_config: [judgedBy(model)] } }, status: 404 })),
  ],
  'POST /sweeps': (a) =>
    a.processed.map((processed_dataset_id) => ({
      body: { training_request: { processed_dataset_id, training_config: { ...TRAINING_CONFIG, eval_config: { eval_strategy: 'steps' } } }, space: { 'hyperparameters.learning_rate': { type: 'float', low: 1e-4, high: 1e-2 } } },
      status: 404,
    })),
  'POST /exports': (a) => a.jobs.map((job_id) => ({ body: { job_id }, status: 404 })),
  'POST /evaluation': (a, b) => [
    ...a.processed.map((dataset_id) => ({ body: { model_source: 'base', base_model_id: TINY_MODEL, dataset_id, max_samples: 1 }, status: 404 })),
    ...a.jobs.map((job_id) => ({ body: { job_id, dataset_id: b.processedDatasetId, max_samples: 1 }, status: 404 })),
    ...a.models.map((model) => ({ body: { model_source: 'base', base_model_id: TINY_MODEL, dataset_id: b.processedDatasetId, max_samples: 1, graders: [judgedBy(model)] }, status: 404 })),
  ],
  'POST /inference/batch': (a) => a.jobs.map((job_id) => ({ body: { job_id, messages: [[{ role: 'user', content: 'hi' }]], max_new_tokens: 1 }, status: 404 })),
  'POST /evaluations': (a) => [
    ...a.jobs.map((job_id) => ({ body: { job_id, benchmarks: { tasks: ['hellaswag'] } }, status: 404 })),
    ...a.processed.map((dataset_id) => ({ body: { model_source: 'base', base_model_id: TINY_MODEL, dataset: { dataset_id } }, status: 404 })),
  ],
  'POST /comparisons': (a, b) => {
    const base = { model_source: 'base', base_model_id: TINY_MODEL };
    const fast = { ...base, use_fast_engine: true };
    return [
      ...a.processed.map((dataset_id) => ({ body: { dataset_id, model_a: base, model_b: fast, judge: { model: TINY_MODEL } }, status: 404 })),
      ...a.jobs.map((job_id) => ({ body: { dataset_id: b.processedDatasetId, model_a: { job_id }, model_b: base, judge: { model: TINY_MODEL } }, status: 404 })),
      ...a.models.map((model) => ({ body: { dataset_id: b.processedDatasetId, model_a: base, model_b: fast, judge: { model } }, status: 404 })),
    ];
  },
  'POST /v1/files': () => [{ form: form({ purpose: 'fine-tune' }, B_JSONL), status: 200 }],
  'POST /v1/uploads': () => [{ body: { bytes: 10, filename: 'b-upload.jsonl', mime_type: 'application/jsonl', purpose: 'fine-tune' }, status: 200 }],
  'POST /v1/uploads/{upload_id}/parts': () => [{ form: () => { const data = new FormData(); data.append('data', new Blob(['b part']), 'b-part'); return data; }, status: 404 }],
  'POST /v1/uploads/{upload_id}/complete': (a) => [{ body: { part_ids: a.parts }, status: 404 }],
  'POST /v1/batches': (a) => a.raw.map((input_file_id) => ({ body: { input_file_id, endpoint: '/v1/chat/completions', completion_window: '24h' }, status: 404 })),
  'POST /v1/fine_tuning/checkpoints/{fine_tuned_model_checkpoint}/permissions': () => [{ body: { project_ids: ['b'] }, status: 404 }],
  'POST /v1/webhook_endpoints': () => [{ body: { name: 'b-hooks', url: 'https://hooks.example.com/b', event_types: ['fine_tuning.job.succeeded'] }, status: 200 }],
  'POST /v1/webhook_endpoints/{webhook_endpoint_id}': () => [{ body: { name: 'b-hooks' }, status: 404 }],
  'POST /v1/webhook_endpoints/{webhook_endpoint_id}/rotate_secret': () => [{ body: {}, status: 404 }],
  'POST /v1/webhook_endpoints/{webhook_endpoint_id}/test': () => [{ body: { event_type: 'fine_tuning.job.succeeded' }, status: 404 }],
  'POST /v1/fine_tuning/jobs': (a, b) => [
    ...a.raw.map((training_file) => ({ body: { model: TINY_MODEL, training_file }, ...fileNotFound('training_file') })),
    ...a.raw.map((validation_file) => ({ body: { model: TINY_MODEL, training_file: b.fileId, validation_file }, ...fileNotFound('validation_file') })),
    ...a.models.map((model) => ({ body: { model: TINY_MODEL, training_file: b.fileId, method: { type: 'reinforcement', reinforcement: { grader: judgedBy(model) } } }, status: 404 })),
  ],
  'POST /v1/fine_tuning/alpha/graders/validate': (a) => a.models.map((model) => ({ body: { grader: judgedBy(model) }, status: 404 })),
  'POST /v1/fine_tuning/alpha/graders/run': (a) => a.models.map((model) => ({ body: { grader: judgedBy(model), model_sample: 'x', item: {} }, status: 404 })),
  'POST /v1/chat/completions': (a) => a.models.map((model) => ({ body: { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }, status: 404 })),
  'POST /v1/responses': (a) => a.models.map((model) => ({ body: { model, input: 'hi', max_output_tokens: 1 }, status: 404 })),
  // The Tinker-compatible service: what the SDK sends, naming A's session, run (by model id or in a tinker:// path),
  // sampler or future. A has no checkpoint (no worker saves one), so a path names a checkpoint of A's run that B is
  // refused at whatever its name.
  'POST /api/v1/client/config': () => [{ body: { sdk_version: '0.38.0' }, status: 200 }],
  'POST /api/v1/client/dynamic_config': () => [{ body: { sdk_version: '0.38.0' }, status: 200 }],
  'POST /api/v1/create_session': () => [{ body: {}, status: 200 }],
  'POST /api/v1/telemetry': () => [{ body: {}, status: 200 }],
  'POST /api/v1/session_heartbeat': (a) => a.tinkerSessions.map((session_id) => ({ body: { session_id }, status: 404 })),
  'POST /api/v1/sessions/{session_id}/finish': () => [{ body: {}, status: 404 }],
  'POST /api/v1/create_model': (a) => a.tinkerSessions.map((session_id) => ({ body: { session_id, model_seq_id: 1, base_model: TINY_MODEL }, status: 404 })),
  'POST /api/v1/get_info': (a) => a.tinkerModels.map((model_id) => ({ body: { model_id }, status: 404 })),
  'POST /api/v1/forward_backward': (a) =>
    a.tinkerModels.map((model_id) => ({
      raw: {
        type: 'application/x-protobuf',
        bytes: encodeForwardBackwardRequest({
          model_id, seq_id: 1, loss_fn: 'cross_entropy', loss_fn_config: null, forward_only: false,
          data: [{ model_input: { chunks: [{ type: 'encoded_text', tokens: [1, 2] }] }, loss_fn_inputs: { target_tokens: { data: [2, 3], dtype: 'int64', shape: [2] }, weights: { data: [1, 1], dtype: 'float32', shape: [2] } } }],
        }),
      },
      status: 404,
    })),
  'POST /api/v1/optim_step': (a) => a.tinkerModels.map((model_id) => ({ body: { model_id, seq_id: 1, adam_params: { learning_rate: 1e-4 } }, status: 404 })),
  'POST /api/v1/save_weights': (a) => a.tinkerModels.map((model_id) => ({ body: { model_id, seq_id: 1, path: 'b-state' }, status: 404 })),
  'POST /api/v1/save_weights_for_sampler': (a) => a.tinkerModels.map((model_id) => ({ body: { model_id, seq_id: 1 }, status: 404 })),
  'POST /api/v1/load_weights': (a, b) => [
    ...a.tinkerRuns.map((run) => ({ body: { session_id: b.tinkerSessionId, model_seq_id: 0, path: `tinker://${run}/weights/x` }, status: 404 })),
    ...a.tinkerModels.map((model_id) => ({ body: { model_id, seq_id: 1, path: `tinker://${a.tinkerRuns[0]}/weights/x` }, status: 404 })),
  ],
  'POST /api/v1/create_sampling_session': (a, b) => [
    ...a.tinkerSessions.map((session_id) => ({ body: { session_id, sampling_session_seq_id: 1, base_model: TINY_MODEL }, status: 404 })),
    ...a.tinkerRuns.map((run) => ({ body: { session_id: b.tinkerSessionId, sampling_session_seq_id: 0, model_path: `tinker://${run}/sampler_weights/x` }, status: 404 })),
  ],
  'POST /api/v1/asample': (a) =>
    a.samplers.map((sampling_session_id) => ({ body: { sampling_session_id, prompt: { chunks: [{ type: 'encoded_text', tokens: [1, 2] }] }, sampling_params: { max_tokens: 1 } }, status: 404 })),
  'POST /api/v1/retrieve_future': (a) => a.futures.map((request_id) => ({ body: { request_id }, status: 404 })),
  'POST /api/v1/weights_info': (a) =>
    a.tinkerRuns.flatMap((run) => ['weights', 'sampler_weights'].map((kind) => ({ body: { tinker_path: `tinker://${run}/${kind}/x` }, status: 404 }))),
};

/** GETs naming A's ids that A gets a 404 from too, with why. B's 404 there still shows nothing of A's; everywhere
 *  else A gets no 404, which shows B's 404 is isolation. */
const A_HAS_NONE: Record<string, string> = {
  'GET /exports/{job_id}/download': 'no job of A completes without a worker, so none has an export file to download',
  'GET /v1/fine_tuning/checkpoints/{fine_tuned_model_checkpoint}/permissions': 'no job of A stores a checkpoint without a worker, so none can be shared',
  'GET /comparisons/{comparison_id}': 'a comparison is stored only once a worker has run it, so A has none',
  'GET /sweeps/{sweep_id}': 'a sweep is accepted only once a worker has made its largest trial’s pre-flight, so A has none',
};

// ---- Reading the documents ----

function readOperations(service: ServiceName, document: Json): Operation[] {
  const operations: Operation[] = [];
  const resolve = (p: Json): Json => {
    if (typeof p.$ref !== 'string') return p;
    const target = p.$ref.replace(/^#\//, '').split('/').reduce((node: Json | undefined, part: string) => node?.[part], document);
    if (!target) throw new Error(`openapi/${service}.json: unresolved ${p.$ref}`);
    return target;
  };
  for (const [template, item] of Object.entries(document.paths as Record<string, Json>)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!HTTP_METHODS.includes(method)) continue;
      const params = [...(item.parameters ?? []), ...(operation.parameters ?? [])].map(resolve);
      const body = operation.requestBody ? resolve(operation.requestBody) : undefined;
      const declared = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
      operations.push({
        service,
        method: method.toUpperCase(),
        template,
        key: `${method.toUpperCase()} ${template}`,
        pathParams: declared,
        requiredQuery: params.filter((p) => p.in === 'query' && p.required).map((p) => p.name as string),
        bodyTypes: Object.keys(body?.content ?? {}),
      });
      const undeclared = declared.filter((name) => !params.some((p) => p.in === 'path' && p.name === name));
      if (undeclared.length > 0) throw new Error(`openapi/${service}.json ${method.toUpperCase()} ${template}: path parameter ${undeclared.join(', ')} is not declared`);
    }
  }
  return operations;
}

// ---- Sending ----

interface Answer {
  status: number;
  contentType: string;
  /** The body as text (a stream's first event only) and the header values: what is searched for A's strings. */
  text: string;
  body: any;
}

/** One request; a server-sent event stream is read up to its first event (a job's stream stays open while the job
 *  is queued), and every request has a time limit, so nothing here can hang. */
async function send(url: string, token: string, init: { method: string; json?: unknown; form?: FormData; raw?: Variant['raw'] }): Promise<Answer> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`${init.method} ${url}: no answer within 30 s`)), 30_000);
  try {
    const res = await fetch(url, {
      method: init.method,
      signal: controller.signal,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(init.json !== undefined ? { 'content-type': 'application/json' } : init.raw ? { 'content-type': init.raw.type } : {}),
      },
      ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : init.form ? { body: init.form } : init.raw ? { body: init.raw.bytes } : {}),
    });
    const contentType = res.headers.get('content-type') ?? '';
    let text = '';
    if (contentType.startsWith('text/event-stream') && res.body) {
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      const firstEvent = setTimeout(() => void reader.cancel(), 2_000);
      try {
        while (!text.includes('\n\n')) {
          const { done, value } = await reader.read();
          if (done) break;
          text += decoder.decode(value, { stream: true });
        }
      } finally {
        clearTimeout(firstEvent);
        await reader.cancel().catch(() => {});
      }
    } else {
      text = await res.text();
    }
    const headers = [...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n');
    let body: any = text;
    if (contentType.startsWith('application/json')) body = JSON.parse(text);
    return { status: res.status, contentType, text: `${headers}\n\n${text}`, body };
  } finally {
    clearTimeout(timer);
  }
}

/** Every file under the stack's blob folder, by path and size. */
async function storedBlobs(): Promise<string[]> {
  const root = path.join(dataDir, 'blobs');
  const entries = await fs.readdir(root, { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
  return (await Promise.all(files.map(async (f) => `${path.relative(root, f)} ${(await fs.stat(f)).size}`))).sort();
}

// ---- The stack and the two users ----

let dataDir: string;
let urls: StackUrls;
let stack: StackProcess;
let tokenA: string;
let tokenB: string;
const operations: Operation[] = [];

const mint = (sub: string) => new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(sub).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(JWT_SECRET));

async function ok(url: string, token: string, init: { method: string; json?: unknown; form?: FormData }): Promise<any> {
  const answer = await send(url, token, init);
  if (answer.status !== 200) throw new Error(`${init.method} ${url} → ${answer.status}: ${answer.text.slice(-1000)}`);
  return answer.body;
}

beforeAll(async () => {
  // The documents are read from the folder, and each must be a service's: a document added there is covered or fails.
  const files = (await fs.readdir(OPENAPI_DIR)).filter((f) => f.endsWith('.json')).sort();
  expect(files).toEqual(SERVICE_NAMES.map((s) => `${s}.json`).sort());
  for (const service of SERVICE_NAMES) operations.push(...readOperations(service, JSON.parse(await fs.readFile(path.join(OPENAPI_DIR, `${service}.json`), 'utf8')) as Json));

  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-isolation-'));
  const ports = await stackPorts();
  urls = ports.urls;
  stack = await startStack(
    { ...ports.env, DATA_DIR: dataDir, MODELS_DIR: await tinyModelsDir(), AUTH_MODE: 'jwt', JWT_SECRET, START_WORKER: 'false', LOG_LEVEL: 'warn' },
    urls,
  );
  [tokenA, tokenB] = [await mint(USER_A), await mint(USER_B)];
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
});

describe('isolation between two users, over every operation of every OpenAPI document', () => {
  it('answers B 404 for every one of A’s ids, leaks none of A’s data, and leaves A’s resources as they were', { timeout: 120_000 }, async () => {
    // 1. A: one of everything with an id that exists without a worker; first a webhook endpoint, which the failed job's
    //    event below is delivered to (tried: hooks.example.com is not reached from here).
    const hooks = await ok(`${urls.openai}/v1/webhook_endpoints`, tokenA, { method: 'POST', json: { name: A_TEXT.webhookName, url: A_TEXT.webhookUrl, event_types: ['fine_tuning.job.failed'] } });
    const upload = await ok(`${urls.preprocessing}/datasets/upload`, tokenA, {
      method: 'POST',
      form: form({}, { text: csvOf(Array.from({ length: 4 }, (_, i) => [`${A_TEXT.question} ${i}`, 'blue'])), name: A_TEXT.uploadName })(),
    });
    const processed = await ok(`${urls.preprocessing}/datasets/process`, tokenA, {
      method: 'POST',
      json: { dataset_name: A_TEXT.datasetName, dataset_id: upload.dataset_id, config: { field_mappings: FIELD_MAPPINGS } },
    });
    const train = await ok(`${urls.training}/train`, tokenA, {
      method: 'POST',
      json: { processed_dataset_id: processed.processed_dataset_id, job_name: A_TEXT.jobName, training_config: TRAINING_CONFIG },
    });
    const file = await ok(`${urls.openai}/v1/files`, tokenA, {
      method: 'POST',
      form: form({ purpose: 'fine-tune' }, { text: Array.from({ length: 4 }, (_, i) => chatLine(`${A_TEXT.chatLine} ${i}`, 'hi')).join('\n'), name: A_TEXT.fileName })(),
    });
    const fineTuning = await ok(`${urls.openai}/v1/fine_tuning/jobs`, tokenA, { method: 'POST', json: { model: TINY_MODEL, training_file: file.id, suffix: A_TEXT.suffix } });
    // A file with a line that is no chat line: a job for it is created failed (no worker needed), and it is a file too.
    const badFile = await ok(`${urls.openai}/v1/files`, tokenA, {
      method: 'POST',
      form: form({ purpose: 'fine-tune' }, { text: JSON.stringify({ prompt: `${MARK} not a chat line` }), name: A_TEXT.badFileName })(),
    });
    const failed = await ok(`${urls.openai}/v1/fine_tuning/jobs`, tokenA, { method: 'POST', json: { model: TINY_MODEL, training_file: badFile.id } });
    expect(train.job_id).toBeTypeOf('string');
    expect(fineTuning.status).toBe('queued');
    expect(failed.status).toBe('failed');
    const ftJob = await ok(`${urls.training}/jobs/${fineTuning.id}`, tokenA, { method: 'GET' });
    expect(ftJob.processed_dataset_id).toMatch(/^pd_/);
    const events = await ok(`${urls.openai}/v1/fine_tuning/jobs/${fineTuning.id}/events`, tokenA, { method: 'GET' });
    const aLines = `${chatLine(`${A_TEXT.chatLine} in parts`, 'hi')}\n`;
    const aUpload = await ok(`${urls.openai}/v1/uploads`, tokenA, { method: 'POST', json: { bytes: Buffer.byteLength(aLines), filename: A_TEXT.fileName, mime_type: 'application/jsonl', purpose: 'fine-tune' } });
    const aPartForm = new FormData();
    aPartForm.append('data', new Blob([aLines]), 'part');
    const aPart = await ok(`${urls.openai}/v1/uploads/${aUpload.id}/parts`, tokenA, { method: 'POST', form: aPartForm });
    const batchFile = await ok(`${urls.openai}/v1/files`, tokenA, {
      method: 'POST',
      form: form({ purpose: 'batch' }, { text: JSON.stringify({ custom_id: `${MARK}-line`, method: 'POST', url: '/v1/chat/completions', body: { model: TINY_MODEL, messages: [{ role: 'user', content: A_TEXT.chatLine }] } }), name: A_TEXT.fileName })(),
    });
    const aBatch = await ok(`${urls.openai}/v1/batches`, tokenA, { method: 'POST', json: { input_file_id: batchFile.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { note: MARK } } });
    const aEvaluation = await ok(`${urls.inference}/evaluations`, tokenA, { method: 'POST', json: { model_source: 'base', base_model_id: TINY_MODEL, benchmarks: { tasks: [`${MARK}_task`] } } });
    expect(aEvaluation.status).toBe('queued');
    const deliveries = await ok(`${urls.openai}/v1/webhook_endpoints/${hooks.id}/deliveries`, tokenA, { method: 'GET' });
    expect(deliveries.data.map((d: { event_type: string }) => d.event_type)).toEqual(['fine_tuning.job.failed']);
    // Tinker: a session, a training run in it (queued: no worker takes it) and a sampler of the base model.
    const tinkerSession = await ok(`${urls.tinker}/api/v1/create_session`, tokenA, { method: 'POST', json: {} });
    const tinkerModel = await ok(`${urls.tinker}/api/v1/create_model`, tokenA, { method: 'POST', json: { session_id: tinkerSession.session_id, model_seq_id: 0, base_model: TINY_MODEL } });
    expect(tinkerModel.model_id).toBe(`${tinkerSession.session_id}:train:0`);
    const tinkerRuns = await ok(`${urls.tinker}/api/v1/training_runs`, tokenA, { method: 'GET' });
    expect(tinkerRuns.training_runs).toHaveLength(1);
    const sampler = await ok(`${urls.tinker}/api/v1/create_sampling_session`, tokenA, { method: 'POST', json: { session_id: tinkerSession.session_id, sampling_session_seq_id: 0, base_model: TINY_MODEL } });
    const a: AIds = {
      raw: [upload.dataset_id, file.id, badFile.id, batchFile.id],
      processed: [processed.processed_dataset_id, ftJob.processed_dataset_id],
      jobs: [train.job_id, fineTuning.id, failed.id],
      // The names A's jobs' models have (ft:<base>:<suffix>:<job id>); A gets a 409 there (queued), not a 404.
      models: [
        `ft:${TINY_MODEL}:${A_TEXT.suffix}:${fineTuning.id}`,
        `ft:${TINY_MODEL}:custom:${train.job_id}`,
      ],
      events: (events.data as Array<{ id: string }>).map((e) => e.id),
      uploads: [aUpload.id],
      parts: [aPart.id],
      batches: [aBatch.id],
      evaluations: [aEvaluation.id],
      webhooks: [hooks.id],
      deliveries: (deliveries.data as Array<{ id: string }>).map((d) => d.id),
      tinkerSessions: [tinkerSession.session_id],
      tinkerModels: [tinkerModel.model_id],
      tinkerRuns: [tinkerRuns.training_runs[0].training_run_id],
      samplers: [sampler.sampling_session_id],
      futures: [tinkerModel.request_id],
    };
    expect(a.tinkerRuns[0]).toMatch(/^job_/);
    expect(a.events.length).toBeGreaterThan(0);
    /** Nothing of these may reach B, unless B's own request sent it (a 404 may name the id asked for). */
    const secrets = [...new Set([...a.raw, ...a.processed, ...a.jobs, ...a.models, ...a.events, ...a.uploads, ...a.parts, ...a.batches, ...a.evaluations, ...a.webhooks, ...a.deliveries, ...a.tinkerSessions, ...a.tinkerModels, ...a.tinkerRuns, ...a.samplers, ...a.futures, hooks.signing_secret, USER_A, ...Object.values(A_TEXT)])];

    // 2. B's own: a processed dataset and a file, for the requests that name one of B's besides one of A's.
    const bUpload = await ok(`${urls.preprocessing}/datasets/upload`, tokenB, { method: 'POST', form: form({}, B_CSV)() });
    const bProcessed = await ok(`${urls.preprocessing}/datasets/process`, tokenB, {
      method: 'POST',
      json: { dataset_name: 'b-processed', dataset_id: bUpload.dataset_id, config: { field_mappings: FIELD_MAPPINGS } },
    });
    const bFile = await ok(`${urls.openai}/v1/files`, tokenB, { method: 'POST', form: form({ purpose: 'fine-tune' }, B_JSONL)() });
    const bSession = await ok(`${urls.tinker}/api/v1/create_session`, tokenB, { method: 'POST', json: {} });
    const b: BIds = { processedDatasetId: bProcessed.processed_dataset_id, fileId: bFile.id, tinkerSessionId: bSession.session_id };

    // 3. Every operation as concrete requests: path parameters from A's ids (each of them), bodies from the table.
    const values = pathValues(a);
    const missing: string[] = [];
    const requests = operations.flatMap((op) => {
      let paths = [op.template];
      for (const name of op.pathParams) {
        const ids = values[name];
        if (!ids) {
          missing.push(`${op.key} (${op.service}): path parameter {${name}} has no entry in pathValues`);
          return [];
        }
        paths = paths.flatMap((p) => ids.map((id) => p.replace(`{${name}}`, encodeURIComponent(id))));
      }
      const query = new URLSearchParams();
      for (const name of op.requiredQuery) {
        if (QUERY_VALUES[name] === undefined) {
          missing.push(`${op.key} (${op.service}): required query parameter ${name} has no entry in QUERY_VALUES`);
          return [];
        }
        query.set(name, QUERY_VALUES[name]);
      }
      const search = op.requiredQuery.length > 0 ? `?${query}` : '';
      let variants: Variant[];
      if (op.bodyTypes.length > 0) {
        const table = BODIES[op.key];
        if (!table) {
          missing.push(`${op.key} (${op.service}): takes a request body (${op.bodyTypes.join(', ')}) and has no entry in BODIES`);
          return [];
        }
        variants = table(a, b);
      } else {
        // No body: a request naming A's ids in its path is a 404; one naming nothing (a list, /health) a 200; /metrics
        // is the operator's, and this stack sets no METRICS_TOKEN: 403 for any user (test/metrics.test.ts reads it).
        variants = [{ status: op.pathParams.length > 0 ? 404 : op.template === '/metrics' ? 403 : 200 }];
      }
      return paths.flatMap((p) => variants.map((variant) => ({ op, url: `${urls[op.service]}${p}${search}`, variant })));
    });
    if (missing.length > 0) throw new Error(`operations of openapi/*.json this test cannot build a request for:\n${missing.join('\n')}`);
    // Stale entries are mistakes too: every table key names an operation of the documents that uses it.
    const keys = new Set(operations.map((op) => op.key));
    expect(Object.keys(BODIES).filter((k) => !keys.has(k) || operations.find((op) => op.key === k)!.bodyTypes.length === 0)).toEqual([]);
    expect(Object.keys(A_HAS_NONE).filter((k) => !keys.has(k))).toEqual([]);

    // 4. A reads every GET first: what it gets back is compared after B's requests (all there, unchanged), and where
    //    it names A's ids, A's answer is no 404 (A has that resource), so B's 404 for the same request is isolation,
    //    not a wrong URL or a resource that does not exist.
    const readAsA = async () => {
      const seen = new Map<string, { key: string; status: number; body: unknown }>();
      for (const { op, url } of requests) {
        if (op.method !== 'GET') continue;
        const answer = await send(url, tokenA, { method: 'GET' });
        // A stream's first event is only what the job is at the moment; its status is what is compared.
        seen.set(url, { key: op.key, status: answer.status, body: answer.contentType.startsWith('text/event-stream') ? null : answer.body });
      }
      return seen;
    };
    const before = await readAsA();
    for (const [url, { key, status, body }] of before) {
      if (!operations.find((op) => op.key === key)!.pathParams.length) continue;
      const what = `A's own ${key} at ${url} → ${status} ${JSON.stringify(body).slice(0, 300)}`;
      expect(status, what).toBeLessThan(500);
      if (A_HAS_NONE[key]) expect(status, what).toBe(404);
      else expect(status, what).not.toBe(404);
    }

    // 5. B: every request, its status, and none of A's strings in any answer.
    const failures: string[] = [];
    for (const { op, url, variant } of requests) {
      const answer = await send(url, tokenB, { method: op.method, json: variant.body, form: variant.form?.(), raw: variant.raw });
      // A protobuf body's strings are its bytes as they are (the ids in it are ASCII).
      const shown = variant.body !== undefined ? JSON.stringify(variant.body) : variant.raw ? Buffer.from(variant.raw.bytes).toString('latin1') : '';
      const sent = `${decodeURIComponent(url)}\n${shown}`;
      const what = `B: ${op.method} ${decodeURIComponent(url.replace(urls[op.service], ''))}${variant.body !== undefined ? ` ${shown}` : variant.raw ? ` (${variant.raw.type}, ${variant.raw.bytes.byteLength} bytes)` : ''} → ${answer.status} ${answer.text.split('\n\n').slice(1).join('\n\n').slice(0, 400)}`;
      const problems: string[] = [];
      const leaked = secrets.filter((secret) => answer.text.includes(secret) && !sent.includes(secret));
      if (leaked.length > 0) problems.push(`holds A's ${leaked.join(', ')}`);
      if (answer.status !== variant.status) problems.push(`expected ${variant.status}`);
      else {
        try {
          if (answer.status === 404) {
            // The resource's 404 in the service's error body, not the router's (which would mean a path built wrong).
            // A model of another user reads as one that does not exist: OpenAI's model_not_found (a chat's model, a
            // grader's judge).
            const namesModel = op.pathParams.includes('model') || op.key === 'POST /v1/chat/completions' || op.key === 'POST /v1/responses' || JSON.stringify(variant.body ?? {}).includes('"score_model"');
            if (op.service === 'openai') expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', code: namesModel ? 'model_not_found' : 'not_found', message: expect.any(String) });
            else expect(answer.body.detail).toBeTypeOf('string');
            expect(answer.body.error?.message ?? answer.body.detail).not.toMatch(/^no endpoint /);
          }
          variant.check?.(answer.body);
        } catch (err) {
          problems.push((err as Error).message);
        }
      }
      if (problems.length > 0) failures.push(`${what}\n  ${problems.join('\n  ')}`);
    }
    expect(failures, failures.join('\n\n')).toEqual([]);

    // 6. No credential at all: a shared deployment has no anonymous user (once, a request with no key was user `local`,
    //    whom the first key belongs to). Every documented operation but /health and /api/v1/healthz (200) and /metrics
    //    (403: no METRICS_TOKEN here) is a 401, and nothing is stored.
    const blobsBefore = await storedBlobs();
    const anonymous: string[] = [];
    for (const { op, url, variant } of requests) {
      const answer = await send(url, '', { method: op.method, json: variant.body, form: variant.form?.(), raw: variant.raw });
      // The tinker SDK checks /api/v1/healthz with no key (its document says so: security []).
      const expected = op.template === '/health' || op.key === 'GET /api/v1/healthz' ? 200 : op.template === '/metrics' ? 403 : 401;
      if (answer.status !== expected) anonymous.push(`anonymous ${op.method} ${decodeURIComponent(url.replace(urls[op.service], ''))} → ${answer.status}, expected ${expected}`);
      else if (expected === 401 && !/Authorization: Bearer <token>/.test(answer.body?.detail ?? answer.body?.error?.message ?? '')) anonymous.push(`anonymous ${op.key}: the 401 does not say what to send`);
    }
    expect(anonymous, anonymous.join('\n')).toEqual([]);
    expect(await storedBlobs()).toEqual(blobsBefore);

    // 7. A's resources, all still there and unchanged (uploads included: they are /v1 files), and A's lists as they
    //    were: B's deletes, cancels and submissions did nothing to A's, and B's own made nothing appear on A's side.
    const after = await readAsA();
    expect(after.size).toBe(before.size);
    // (The deployment's own state is nobody's: the queue lanes in GET /workers count B's queued jobs too.)
    const deploymentWide = new Set(['GET /workers', 'GET /metrics']);
    // A's deliveries go on being tried meanwhile (hooks.example.com is not reached from here): which events went to
    // which endpoint is what B must not change, not how their attempts went.
    const steady = (got: { key: string; status: number; body: unknown } | undefined) =>
      got?.key !== 'GET /v1/webhook_endpoints/{webhook_endpoint_id}/deliveries' ? got
      : { ...got, body: (got.body as { data: Json[] }).data.map(({ id, event_id, event_type, created_at }) => ({ id, event_id, event_type, created_at })) };
    for (const [url, got] of before) if (!deploymentWide.has(got.key)) expect(steady(after.get(url)), `A: GET ${url}`).toEqual(steady(got));
    // A's upload in parts has no GET: B's parts, completions and cancels left it open with its one part.
    const completed = await ok(`${urls.openai}/v1/uploads/${aUpload.id}/complete`, tokenA, { method: 'POST', json: { part_ids: [aPart.id] } });
    expect(completed).toMatchObject({ status: 'completed', file: { bytes: Buffer.byteLength(aLines), filename: A_TEXT.fileName } });
    // A's tinker session has no GET: B's finish and heartbeats left it going (a finished one's heartbeat is a 410).
    expect(await ok(`${urls.tinker}/api/v1/session_heartbeat`, tokenA, { method: 'POST', json: { session_id: tinkerSession.session_id } })).toEqual({});
  });
});
