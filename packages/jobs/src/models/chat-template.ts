// A base model's chat template, read from its files where they are at hand (the model store, a folder), and whether
// it can write tools: what submit-time checks and chat completions ask before any work is queued. The template is
// rendered by template-render.ts (@huggingface/jinja, as node-llama-cpp renders it), the same probe as the core's
// chat.supports_tools.
import { UnprocessableEntity } from '@ftp/platform';
import { readModelFile, type ModelLocation, type ModelLookup } from './model-store.ts';
import { templateSupportsTools } from './template-render.ts';

export { renderChatTemplate, templateSupportsTools } from './template-render.ts';

/** The default chat template of a located model: chat_template.jinja, or tokenizer_config.json's chat_template
 *  (a string, or the entry named "default" of a list); undefined when its files cannot be read without a download. */
export async function modelChatTemplate(lookup: ModelLookup, location: ModelLocation): Promise<string | undefined> {
  const file = await readModelFile(lookup, location, 'chat_template.jinja');
  if (file) return file;
  const config = await readModelFile(lookup, location, 'tokenizer_config.json');
  if (!config) return undefined;
  const template = (JSON.parse(config) as { chat_template?: unknown }).chat_template;
  if (typeof template === 'string') return template;
  if (Array.isArray(template)) {
    const named = template.find((t) => t && typeof t === 'object' && (t as { name?: unknown }).name === 'default') as { template?: unknown } | undefined;
    return typeof named?.template === 'string' ? named.template : undefined;
  }
  return undefined;
}

/** Whether a processed dataset's records carry tools: a native one mapped a tools_field, a /v1 one read tools. */
export function datasetUsesTools(dataset: { config: Record<string, unknown> }): boolean {
  const mappings = dataset.config['field_mappings'] as Record<string, unknown> | undefined;
  return mappings?.['tools_field'] !== undefined || dataset.config['tools'] === true;
}

/** 422 at `loc` when the model's template is at hand and cannot write tools (a hub model not fetched yet is checked
 *  by the core before it trains). */
export async function checkToolTemplate(lookup: ModelLookup, location: ModelLocation, modelId: string, loc: string[]): Promise<void> {
  const template = await modelChatTemplate(lookup, location);
  if (template === undefined || templateSupportsTools(template)) return;
  throw new UnprocessableEntity([{
    loc,
    msg: `the chat template of base model ${JSON.stringify(modelId)} has no tool support (it writes neither tool definitions nor tool calls), but the dataset's records use tools; train a model whose template has them (Qwen2.5, Qwen3, Llama 3.1 or later), or a dataset without tools`,
    type: 'value_error',
  }]);
}
