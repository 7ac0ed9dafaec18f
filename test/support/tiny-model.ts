// A tiny random-init model made by the real core (`make-tiny-model`), built once per version of the
// core's model code and shared by every test file: MODELS_DIR for tests, holding the model `tiny`.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { DEFAULT_CORE_PYTHON } from '@ftp/core-client';

const CORE = fileURLToPath(new URL('../../core/', import.meta.url));
export const TINY_MODEL = 'tiny';
// The code the model and its tokenizer come from: the model code and the chat template it saves.
const MODEL_SOURCES = ['tiny_model.py', 'chat.py'];

/** Returns a models folder that contains `tiny/` (an HF model folder with tokenizer and chat template). */
export async function tinyModelsDir(): Promise<string> {
  const hash = createHash('sha256');
  for (const file of MODEL_SOURCES) hash.update(await fs.readFile(path.join(CORE, 'src/ftcore', file)));
  const dir = path.join(os.tmpdir(), `ftp-models-${hash.digest('hex').slice(0, 12)}`);
  if (await fs.stat(path.join(dir, TINY_MODEL, 'config.json')).then(() => true, () => false)) return dir;
  const building = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-models-build-'));
  const spec = path.join(building, 'spec.json');
  await fs.writeFile(spec, JSON.stringify({ output_dir: path.join(building, TINY_MODEL) }));
  await promisify(execFile)(process.env.CORE_PYTHON ?? DEFAULT_CORE_PYTHON, ['-m', 'ftcore', 'make-tiny-model', '--spec', spec], { cwd: CORE, timeout: 180_000 });
  await fs.rm(spec);
  // Another test file may have built it meanwhile; either copy is good.
  await fs.rename(building, dir).catch(() => fs.rm(building, { recursive: true, force: true }));
  return dir;
}
