// A model's answer read back as OpenAI's tool calls, in the format its family's chat template teaches: Qwen2.5 and
// Qwen3 (Hermes-style) write `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>` blocks, possibly after some
// text; Llama 3.x answers with a whole JSON object {"name": …, "parameters": {…}} (after <|python_tag|> for its
// built-in tools). Only calls to the request's tools count; anything else stays the answer's text.

export interface ParsedCall {
  name: string;
  /** A JSON object in a string, as OpenAI sends arguments. */
  arguments: string;
}

export interface ParsedAnswer {
  /** The text that is not a call (null when the answer is only calls). */
  content: string | null;
  calls: ParsedCall[];
}

export type ToolCallFormat = 'hermes' | 'llama3';

const HERMES_BLOCK = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;
const PYTHON_TAG = '<|python_tag|>';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function jsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** {"name", "arguments" | "parameters"} naming one of `tools` with an object of arguments, as a call. */
function callOf(value: Record<string, unknown> | undefined, tools: readonly string[]): ParsedCall | undefined {
  if (!value || typeof value['name'] !== 'string' || !tools.includes(value['name'])) return undefined;
  const args = value['arguments'] ?? value['parameters'] ?? {};
  return isObject(args) ? { name: value['name'], arguments: JSON.stringify(args) } : undefined;
}

/** The calls of `text` to any of `tools` (function names); text with no well-formed call is all content. */
export function parseToolCalls(text: string, tools: readonly string[]): ParsedAnswer {
  if (text.includes('<tool_call>')) {
    const calls: ParsedCall[] = [];
    for (const match of text.matchAll(HERMES_BLOCK)) {
      const call = callOf(jsonObject(match[1]!), tools);
      if (!call) return { content: text, calls: [] };
      calls.push(call);
    }
    if (calls.length > 0) {
      const rest = text.replace(HERMES_BLOCK, '').trim();
      return { content: rest === '' ? null : rest, calls };
    }
  }
  const whole = text.trim().replace(PYTHON_TAG, '').trim();
  const call = whole.startsWith('{') ? callOf(jsonObject(whole), tools) : undefined;
  return call ? { content: null, calls: [call] } : { content: text, calls: [] };
}

/** Which of the two formats a chat template teaches (undefined: neither, so no call can be read or forced). */
export function toolCallFormat(template: string): ToolCallFormat | undefined {
  if (template.includes('<tool_call>')) return 'hermes';
  if (template.includes('"parameters": ')) return 'llama3';
  return undefined;
}

/** Whether text streamed so far may still become a call (so it is held back, not streamed as content). */
export function mayBeCall(text: string): boolean {
  const start = text.trimStart();
  if (start === '') return true;
  return ['<tool_call>', PYTHON_TAG, '{'].some((opening) => start.startsWith(opening) || opening.startsWith(start));
}
