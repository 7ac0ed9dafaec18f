// The model store from the command line: `pnpm models add <folder> <model_id>` puts a local HF model folder
// (config.json, weights, tokenizer) into the store, where every worker on every machine finds it as
// base_model_id <model_id>; `pnpm models list`; `pnpm models remove <model_id>`. It writes the blob store only
// (a folder in DATA_DIR, or the S3 bucket of S3_*), so it runs beside a running stack.
import fs from 'node:fs/promises';
import path from 'node:path';
import { loadConfig, openBlobStore } from '@ftp/platform';
import { MODEL_STORE_PREFIX, modelStorePrefix } from '@ftp/jobs';
import { uploadFolder } from '@ftp/worker';

const USAGE = 'usage: pnpm models add <folder> <model_id> | pnpm models list | pnpm models remove <model_id>';

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const blobs = await openBlobStore(loadConfig());
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
