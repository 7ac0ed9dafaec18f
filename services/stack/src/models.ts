// The model store from the command line: `pnpm models add <folder> <model_id>` puts a local HF model folder
// (config.json, weights, tokenizer) into the store, where every worker on every machine finds it as
// base_model_id <model_id>; `pnpm models import <source> <model_id> [chat_template_file]` does so with what the core's
// import-model reads (a packaged model such as smollm2-135m or gemma3-270m, a .gguf file, a hub id); `pnpm models
// default` puts the default base model there unless it is already (scripts/start.sh runs it); `pnpm models list`;
// `pnpm models remove <model_id>`. It writes the blob store only (a folder in DATA_DIR, or the S3 bucket of S3_*),
// so it runs beside a running stack.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describeCoreFailure, runCore } from '@ftp/core-client';
import { loadConfig, openBlobStore, type BlobStore, type Config } from '@ftp/platform';
import { DEFAULT_BASE_MODEL, MODEL_STORE_PREFIX, modelStorePrefix } from '@ftp/jobs/models';
import { uploadFolder } from '@ftp/worker';

const USAGE = 'usage: pnpm models add <folder> <model_id> | pnpm models import <source> <model_id> [chat_template_file] | pnpm models default | pnpm models list | pnpm models remove <model_id>';
const say = (line: string) => process.stderr.write(`models: ${line}\n`);

/** The core's import-model into a temporary folder, then into the store; a line every 10 s while it runs. */
async function importModel(config: Config, blobs: BlobStore, modelId: string, options: Record<string, string>): Promise<boolean> {
  const work = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-import-'));
  const started = Date.now();
  const what = `importing ${options.source} as ${modelId}`;
  say(`${what} (once; about a minute)…`);
  const ticker = setInterval(() => say(`${what}: ${Math.round((Date.now() - started) / 1000)} s so far`), 10_000);
  try {
    const result = await runCore({
      command: 'import-model',
      spec: { ...options, output_dir: path.join(work, 'model') },
      specFile: path.join(work, 'spec.json'),
      python: config.CORE_PYTHON,
      env: { HF_ENDPOINT: config.HF_ENDPOINT },
    });
    if (!result.done || result.exitCode !== 0) {
      say(`${what} failed: ${describeCoreFailure(result)}`);
      return false;
    }
    const uri = await uploadFolder({ blobs }, path.join(work, 'model'), modelStorePrefix(modelId).slice(0, -1));
    say(`${modelId} is in the model store (${uri}), in ${Math.round((Date.now() - started) / 1000)} s`);
    return true;
  } finally {
    clearInterval(ticker);
    await fs.rm(work, { recursive: true, force: true });
  }
}

async function inStore(blobs: BlobStore, modelId: string): Promise<boolean> {
  return (await blobs.list(modelStorePrefix(modelId))).some((b) => b.key.endsWith('/config.json'));
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const config = loadConfig();
  const blobs = await openBlobStore(config);
  if (command === 'default' && rest.length === 0) {
    const { modelId, importOptions } = DEFAULT_BASE_MODEL;
    // A folder an operator dropped into the local model folder counts too: the first worker that uses it stores it.
    if ((await inStore(blobs, modelId)) || (await fs.stat(path.join(config.modelsDir, modelId, 'config.json')).then(() => true, () => false))) return 0;
    return (await importModel(config, blobs, modelId, importOptions)) ? 0 : 1;
  }
  if (command === 'import' && (rest.length === 2 || rest.length === 3)) {
    const [source, modelId, template] = rest as [string, string, string?];
    const options = { source, ...(template ? { chat_template_file: path.resolve(template) } : {}) };
    return (await importModel(config, blobs, modelId, options)) ? 0 : 1;
  }
  if (command === 'add' && rest.length === 2) {
    const [folder, modelId] = rest as [string, string];
    if (!(await fs.stat(path.join(folder, 'config.json')).then((s) => s.isFile(), () => false))) {
      process.stderr.write(`${folder} is not a model folder (no config.json)\n`);
      return 1;
    }
    const uri = await uploadFolder({ blobs }, path.resolve(folder), modelStorePrefix(modelId).slice(0, -1));
    process.stdout.write(`${modelId} is in the model store: ${uri}\n`);
    return 0;
  }
  if (command === 'list' && rest.length === 0) {
    const models = new Set<string>();
    for (const blob of await blobs.list(MODEL_STORE_PREFIX)) {
      if (blob.key.endsWith('/config.json')) models.add(blob.key.slice(MODEL_STORE_PREFIX.length, -'/config.json'.length));
    }
    for (const model of [...models].sort()) process.stdout.write(`${model}\n`);
    return 0;
  }
  if (command === 'remove' && rest.length === 1) {
    const removed = await blobs.deletePrefix(modelStorePrefix(rest[0]!));
    process.stdout.write(`removed ${removed.length} files of ${rest[0]}\n`);
    return removed.length > 0 ? 0 : 1;
  }
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

process.exitCode = await main(process.argv.slice(2));
