// The one place that maps a base_model_id to a local folder: the local model store (MODELS_DIR, default
// DATA_DIR/models) first, then, for provider hub, the model hub at HF_ENDPOINT (downloaded into the store
// by the core's import-model when a job starts). Used at submit time to reject unknown models early.
import fs from 'node:fs/promises';
import path from 'node:path';
import { invalidField, ServiceUnavailable, type Config } from '@ftp/platform';

export type ModelLocation =
  | { kind: 'local'; folder: string }
  /** On the hub, not in the store yet: the worker downloads it into `folder`. */
  | { kind: 'hub'; folder: string; hubId: string };

const LOC = ['body', 'training_config', 'base_model_id'];

async function isModelFolder(folder: string): Promise<boolean> {
  return fs.stat(path.join(folder, 'config.json')).then((s) => s.isFile(), () => false);
}

/** Where a model id would live in the store; refuses ids that could escape it. */
export function storeFolder(config: Config, modelId: string): string {
  const folder = path.resolve(config.modelsDir, modelId);
  if (!folder.startsWith(config.modelsDir + path.sep) || modelId.split('/').some((s) => s === '..' || s === '.' || s === '')) {
    throw invalidField(LOC, `base_model_id ${JSON.stringify(modelId)} is not a model name; use owner/name or a store folder name`);
  }
  return folder;
}

export async function locateBaseModel(config: Config, provider: 'hub' | 'local', modelId: string, hubToken?: string): Promise<ModelLocation> {
  const looked: string[] = [];
  if (path.isAbsolute(modelId)) {
    if (await isModelFolder(modelId)) return { kind: 'local', folder: modelId };
    throw invalidField(LOC, `no model folder (with config.json) at ${modelId}`, 'unknown_model');
  }
  const folder = storeFolder(config, modelId);
  if (await isModelFolder(folder)) return { kind: 'local', folder };
  looked.push(`the local model store (${folder})`);
  if (provider === 'local') {
    throw invalidField(LOC, `base model ${JSON.stringify(modelId)} not found; looked in ${looked.join(' and ')}. Put an HF model folder there, or use provider "hub"`, 'unknown_model');
  }

  const url = `${config.HF_ENDPOINT.replace(/\/$/, '')}/api/models/${modelId.split('/').map(encodeURIComponent).join('/')}`;
  let status: number;
  try {
    const res = await fetch(url, {
      headers: hubToken ? { authorization: `Bearer ${hubToken}` } : {},
      signal: AbortSignal.timeout(config.HUB_TIMEOUT_MS),
    });
    status = res.status;
    await res.body?.cancel();
  } catch (err) {
    throw new ServiceUnavailable('hub', `the model hub at ${config.HF_ENDPOINT} is unreachable (${(err as Error).message}) and ${JSON.stringify(modelId)} is not in the local model store (${folder}); check HF_ENDPOINT or the network`);
  }
  if (status === 200) return { kind: 'hub', folder, hubId: modelId };
  if (status >= 500 || status === 429) throw new ServiceUnavailable('hub', `the model hub at ${config.HF_ENDPOINT} answered HTTP ${status}; try again later`);
  looked.push(`the model hub at ${config.HF_ENDPOINT} (HTTP ${status}${status === 401 || status === 403 ? ': private or gated, send a hub_token with access' : ''})`);
  throw invalidField(LOC, `base model ${JSON.stringify(modelId)} not found; looked in ${looked.join(' and ')}`, 'unknown_model');
}
