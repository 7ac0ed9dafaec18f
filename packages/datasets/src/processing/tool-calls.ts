// Tool definitions and tool conversations as OpenAI's fine-tuning files carry them (`tools`, assistant `tool_calls`,
// `tool` messages), checked once for both faces: /v1 training files and the native `tools_field` mapping. Each check
// throws an Error whose message names the place (`messages[1].tool_calls[0]…`) and what to change; callers add the
// line or row number.

export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function unknownKey(value: Record<string, unknown>, allowed: string[], where: string): void {
  const unknown = Object.keys(value).find((k) => !allowed.includes(k));
  if (unknown !== undefined) throw new Error(`${where} has unknown key ${JSON.stringify(unknown)}`);
}

/** A `tools` value: a list of {"type": "function", "function": {name, description?, parameters?}}. A JSON string
 *  holding that list is read too (a CSV or Parquet column holds it as text). */
export function readTools(value: unknown, where: string): ToolDefinition[] {
  let tools = value;
  if (typeof value === 'string') {
    try {
      tools = JSON.parse(value);
    } catch (err) {
      throw new Error(`${where} is not JSON (${(err as Error).message}); it must be a JSON array of tools`);
    }
  }
  if (!Array.isArray(tools) || tools.length === 0) throw new Error(`${where} must be a non-empty list of tools ({"type": "function", "function": {"name": …}})`);
  const names = new Set<string>();
  return tools.map((tool, i) => {
    const at = `${where}[${i}]`;
    if (!isObject(tool) || tool['type'] !== 'function' || !isObject(tool['function'])) throw new Error(`${at} must be {"type": "function", "function": {"name": …, "parameters": …}}`);
    unknownKey(tool, ['type', 'function'], at);
    const fn = tool['function'];
    unknownKey(fn, ['name', 'description', 'parameters', 'strict'], `${at}.function`);
    if (typeof fn['name'] !== 'string' || !FUNCTION_NAME.test(fn['name'])) throw new Error(`${at}.function.name must be 1 to 64 letters, digits, _ or -`);
    if (names.has(fn['name'])) throw new Error(`${at}.function.name ${JSON.stringify(fn['name'])} is defined twice`);
    names.add(fn['name']);
    if ('description' in fn && typeof fn['description'] !== 'string') throw new Error(`${at}.function.description must be a string`);
    if ('parameters' in fn && !isObject(fn['parameters'])) throw new Error(`${at}.function.parameters must be a JSON Schema object`);
    if ('strict' in fn && typeof fn['strict'] !== 'boolean') throw new Error(`${at}.function.strict must be true or false`);
    return tool as unknown as ToolDefinition;
  });
}

/** An assistant message's `tool_calls`: each {id, type "function", function {name, arguments}} calls a function of
 *  `tools` with arguments that are a JSON object written as a string. */
export function readToolCalls(value: unknown, where: string, tools: ToolDefinition[] | undefined): ToolCall[] {
  if (!Array.isArray(value) || value.length === 0) throw new Error(`${where} must be a non-empty list of tool calls`);
  const names = new Set((tools ?? []).map((t) => t.function.name));
  return value.map((call, i) => {
    const at = `${where}[${i}]`;
    if (!isObject(call) || !isObject(call['function'])) throw new Error(`${at} must be {"id": …, "type": "function", "function": {"name": …, "arguments": "<JSON>"}}`);
    unknownKey(call, ['id', 'type', 'function'], at);
    if (typeof call['id'] !== 'string' || call['id'] === '') throw new Error(`${at}.id must be a non-empty string (tool messages answer it with tool_call_id)`);
    if (call['type'] !== undefined && call['type'] !== 'function') throw new Error(`${at}.type must be "function"`);
    const fn = call['function'];
    unknownKey(fn, ['name', 'arguments'], `${at}.function`);
    if (typeof fn['name'] !== 'string') throw new Error(`${at}.function.name must be a string`);
    if (!names.has(fn['name'])) {
      const listed = names.size > 0 ? `the tools are ${[...names].join(', ')}` : 'the line has no tools';
      throw new Error(`${at} calls ${JSON.stringify(fn['name'])}, which is not in tools (${listed}); add its definition to tools or fix the name`);
    }
    if (typeof fn['arguments'] !== 'string') throw new Error(`${at}.function.arguments must be a string holding a JSON object`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(fn['arguments']);
    } catch (err) {
      throw new Error(`${at}.function.arguments is not JSON (${(err as Error).message}); write the arguments as a JSON object in a string`);
    }
    if (!isObject(parsed)) throw new Error(`${at}.function.arguments must be a JSON object, such as "{\\"city\\": \\"Paris\\"}"`);
    return { id: call['id'], type: 'function', function: { name: fn['name'], arguments: fn['arguments'] } };
  });
}

/** Tracks the calls a conversation has made, so that each tool message answers one of them. */
export class PendingCalls {
  private readonly open = new Set<string>();

  called(calls: ToolCall[]): void {
    for (const call of calls) this.open.add(call.id);
  }

  answer(id: unknown, where: string): string {
    if (typeof id !== 'string' || id === '') throw new Error(`${where}.tool_call_id must name the id of the tool call it answers`);
    if (!this.open.has(id)) {
      throw new Error(`${where} answers tool_call_id ${JSON.stringify(id)}, but no earlier assistant message made a call with that id${this.open.size > 0 ? ` (open calls: ${[...this.open].join(', ')})` : ''}`);
    }
    this.open.delete(id);
    return id;
  }
}
