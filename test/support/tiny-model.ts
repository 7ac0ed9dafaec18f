// Tiny random-init models made by the real core (`make-tiny-model`), built once per version of the core's model code
// and shared by every test file: MODELS_DIR for tests, holding the model `tiny` (ChatML, no tool support); and one
// that also holds the tool-capable `tiny-qwen2.5` and `tiny-llama3`, with their families' published chat templates.
// And one pretrained model, for what a random one cannot learn in a test's time (copying a city it never saw into a
// call): SmolLM2-135M-Instruct from its PyPI package (the core's `import-model`), with Qwen2.5's published template.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { DEFAULT_CORE_PYTHON } from '@ftp/core-client';
import { DEFAULT_BASE_MODEL } from '@ftp/jobs/models';

const CORE = fileURLToPath(new URL('../../core/', import.meta.url));
export const TINY_MODEL = 'tiny';
const TEMPLATES = path.join(CORE, 'chat_templates');
const QWEN25_TEMPLATE = path.join(TEMPLATES, 'Qwen-Qwen2.5-7B-Instruct.jinja');
const LLAMA3_TEMPLATE = path.join(TEMPLATES, 'meta-llama-Llama-3.3-70B-Instruct.jinja');
/** Tool-capable tiny models, by family: make-tiny-model options (their tokenizers also learn the templates' text, so
 *  the long tool prompts stay short). */
export const TOOL_MODELS = {
  'tiny-qwen2.5': { architecture: 'qwen2', chat_template_file: QWEN25_TEMPLATE, added_tokens: ['<tool_call>', '</tool_call>'] },
  'tiny-llama3': { architecture: 'llama', chat_template_file: LLAMA3_TEMPLATE, end_of_turn: '<|eot_id|>', bos_token: '<|begin_of_text|>' },
} as const;
export type ToolModel = keyof typeof TOOL_MODELS;
const TOOL_MODEL_OPTIONS = { vocab_size: 800, max_position_embeddings: 1024, text_files: [QWEN25_TEMPLATE, LLAMA3_TEMPLATE] };
// What the models and their tokenizers come from, by the core command that makes them: the model code, the chat
// template it saves, the published ones; for an import, the importer and the lock that pins the model's package.
const MODEL_SOURCES = {
  'make-tiny-model': ['src/ftcore/models/tiny_model.py', 'src/ftcore/models/tiny_parts.py', 'src/ftcore/chat.py', QWEN25_TEMPLATE, LLAMA3_TEMPLATE],
  'import-model': ['src/ftcore/models/import_model.py', 'uv.lock', QWEN25_TEMPLATE],
} as const;
/** The default base model (SmolLM2-135M-Instruct, pretrained, Llama architecture, ChatML turns, with Qwen2.5's
 *  template and its tool section), imported as `pnpm models default` imports it. */
export const PRETRAINED_TOOL_MODEL = DEFAULT_BASE_MODEL.modelId;

/** Returns a models folder that contains `tiny/` (an HF model folder with tokenizer and chat template). */
export function tinyModelsDir(): Promise<string> {
  return modelsDir({ [TINY_MODEL]: {} });
}

/** A random model as tiny in every way but width and depth (about 2M parameters), so that a token takes milliseconds
 *  rather than a fraction of one, whose greedy answer to LONG_PROMPT runs to its context's end (the seed is one that
 *  does; most random models say their end-of-turn token sooner or later): what a test of a generation stopped mid-way
 *  needs. */
export const WIDE_TINY_MODEL = 'tiny-wide';
export const LONG_PROMPT = 'Tell me a long story.';

/** Returns a models folder that contains `tiny-wide/`. */
export function wideTinyModelsDir(): Promise<string> {
  return modelsDir({ [WIDE_TINY_MODEL]: { hidden_size: 256, intermediate_size: 512, num_layers: 4, num_heads: 8, num_kv_heads: 4, seed: 1 } });
}

/** Returns a models folder that contains `tiny/` and the tool models of TOOL_MODELS. */
export function toolModelsDir(): Promise<string> {
  const tools = Object.entries(TOOL_MODELS).map(([name, options]) => [name, { ...TOOL_MODEL_OPTIONS, ...options }]);
  return modelsDir({ [TINY_MODEL]: {}, ...Object.fromEntries(tools) });
}

/** Returns a models folder that contains PRETRAINED_TOOL_MODEL. */
export function pretrainedToolModelDir(): Promise<string> {
  return modelsDir({ [PRETRAINED_TOOL_MODEL]: DEFAULT_BASE_MODEL.importOptions }, 'import-model');
}

async function modelsDir(models: Record<string, Record<string, unknown>>, command: keyof typeof MODEL_SOURCES = 'make-tiny-model'): Promise<string> {
  const hash = createHash('sha256');
  for (const file of MODEL_SOURCES[command]) hash.update(await fs.readFile(path.resolve(CORE, file)));
  hash.update(JSON.stringify({ command, models }));
  const dir = path.join(os.tmpdir(), `ftp-models-${hash.digest('hex').slice(0, 12)}`);
  if (await fs.stat(path.join(dir, '.complete')).then(() => true, () => false)) return dir;
  const building = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-models-build-'));
  for (const [name, options] of Object.entries(models)) {
    const spec = path.join(building, 'spec.json');
    await fs.writeFile(spec, JSON.stringify({ output_dir: path.join(building, name), ...options }));
    await promisify(execFile)(process.env.CORE_PYTHON ?? DEFAULT_CORE_PYTHON, ['-m', 'ftcore', command, '--spec', spec], { cwd: CORE, timeout: 180_000 });
    await fs.rm(spec);
  }
  await fs.writeFile(path.join(building, '.complete'), '');
  // Another test file may have built it meanwhile; either copy is good.
  await fs.rename(building, dir).catch(() => fs.rm(building, { recursive: true, force: true }));
  return dir;
}
