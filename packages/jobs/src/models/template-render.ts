// A chat template rendered as transformers renders it, with @huggingface/jinja (the Jinja that node-llama-cpp's chat
// wrapper uses). Apart from chat-template.ts (which reads templates from the model store) and exported on its own
// (`@ftp/jobs/template-render`), so that the fast engine's process, which renders prompts and nothing else, does not
// load the jobs package and the platform under it at every start (1.3 s of CPU of its 3.4, #55).
import { Template } from '@huggingface/jinja';
import type { PlainMessage } from '@ftp/schema';

/** transformers' {% generation %} markers (an assistant-mask extension) mean nothing to other renderers. */
const GENERATION_MARKERS = /\{%-?\s*(end)?generation\s*-?%\}/g;

/** A conversation as the model's own template writes it, with the tool definitions: as transformers renders it
 *  (a call's JSON-string arguments become the object the families' templates write with tojson). */
export function renderChatTemplate(template: string, messages: readonly PlainMessage[], options: { tools?: readonly unknown[]; addGenerationPrompt: boolean; bosToken?: string; eosToken?: string }): string {
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
