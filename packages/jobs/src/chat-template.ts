// A base model's chat template, read from its files where they are at hand (the model store, a folder), and whether
// it can write tools: what submit-time checks and chat completions ask before any work is queued. The template is
// rendered with @huggingface/jinja (the Jinja that node-llama-cpp's chat wrapper uses), the same probe as the core's
// chat.supports_tools.
import { Template } from '@huggingface/jinja';
import { UnprocessableEntity } from '@ftp/platform';
import { readModelFile, type ModelLocation, type ModelLookup } from './model-store.ts';

/** transformers' {% generation %} markers (an assistant-mask extension) mean nothing to other renderers. */
const GENERATION_MARKERS = /\{%-?\s*(end)?generation\s*-?%\}/g;

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

export interface TemplateMessage {
  role: string;
  content: string;
  tool_calls?: readonly { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

/** A conversation as the model's own template writes it, with the tool definitions: as transformers renders it
 *  (a call's JSON-string arguments become the object the families' templates write with tojson). */
export function renderChatTemplate(template: string, messages: readonly TemplateMessage[], options: { tools?: readonly unknown[]; addGenerationPrompt: boolean; bosToken?: string; eosToken?: string }): string {
  const asTemplateSees = messages.map((m) =>
    m.tool_calls ? { ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, function: { name: c.function.name, arguments: JSON.parse(c.function.arguments) as unknown } })) } : m,
  );
  return new Template(template.replace(GENERATION_MARKERS, '')).render({
    messages: asTemplateSees,
    ...(options.tools ? { tools: options.tools } : {}),
    add_generation_prompt: options.addGenerationPrompt,
    bos_token: options.bosToken ?? '',
    eos_token: options.eosToken ?? '',
  });
}

const PROBE_TOOL = {
  type: 'function',
  function: { name: 'probe_tool_name', description: 'probe', parameters: { type: 'object', properties: { probe_arg: { type: 'string' } } } },
};
const PROBE_CALL = { id: 'call_probe', type: 'function', function: { name: 'probe_tool_name', arguments: { probe_arg: 'probe_value' } } };

/** Whether the template writes tool definitions and an assistant's tool call: a probe conversation rendered with a
 *  tool must show the tool's name and the call's argument value. A template that raises on tools has none. */
export function templateSupportsTools(template: string): boolean {
  try {
    const parsed = new Template(template.replace(GENERATION_MARKERS, ''));
    const question = [{ role: 'user', content: 'probe' }];
    const common = { tools: [PROBE_TOOL], bos_token: '', eos_token: '' };
    const prompt = parsed.render({ ...common, messages: question, add_generation_prompt: true });
    const answered = parsed.render({ ...common, messages: [...question, { role: 'assistant', content: '', tool_calls: [PROBE_CALL] }], add_generation_prompt: false });
    return prompt.includes('probe_tool_name') && answered.includes('probe_value');
  } catch {
    return false;
  }
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
