// Function calling in chat completions: the request's tools checked against each other and against the model's own
// chat template (one without tool support is a 400 that says so), and the answers read back as OpenAI's tool_calls in
// the family's format (Qwen's <tool_call> blocks, Llama 3's JSON). A streamed answer that may be a call is held back
// until it is known, then sent as OpenAI streams calls: the call's id and name, then its arguments.
import { randomBytes } from 'node:crypto';
import { invalidField, type Platform } from '@ftp/platform';
import type { ChatCompletionRequest } from '@ftp/schema';
import { locateBaseModel, modelChatTemplate, templateSupportsTools, type NamedModel as ChatModel } from '../models/index.ts';
import { mayBeCall, parseToolCalls, toolCallFormat, type ParsedCall, type ToolCallFormat } from './tool-call-output.ts';

export interface ToolUse {
  /** The function names calls are read for; empty when tool_choice is none (the answer is text). */
  names: string[];
  /** The family's format, when the template is at hand. */
  format: ToolCallFormat | undefined;
}

/** Whether a request involves tools at all: definitions, or calls and results in its history. */
function involvesTools(body: ChatCompletionRequest): boolean {
  return body.tools !== undefined || body.messages.some((m) => m.role === 'tool' || ('tool_calls' in m && m.tool_calls !== undefined));
}

/** What the answer may call, or undefined for a request without tools; a 400 for what cannot work, naming `history`
 *  (the field the face asking holds the conversation in) where the calls of the conversation are at fault. */
export async function checkTools(platform: Platform, model: ChatModel, body: ChatCompletionRequest, history = 'messages'): Promise<ToolUse | undefined> {
  if (body.tool_choice !== undefined && body.tools === undefined) throw invalidField(['body', 'tool_choice'], 'tool_choice needs tools; send the functions in tools, or leave tool_choice out');
  checkHistory(body);
  if (!involvesTools(body)) return undefined;
  const names = (body.tools ?? []).map((t) => t.function.name);
  const choice = body.tool_choice;
  if (typeof choice === 'object' && !names.includes(choice.function.name)) {
    throw invalidField(['body', 'tool_choice', 'function', 'name'], `tool_choice names ${JSON.stringify(choice.function.name)}, which is not in tools (${names.join(', ')})`);
  }
  const baseModel = model.job?.base_model_id ?? (model.choice.model_source === 'base' ? model.choice.base_model_id : undefined);
  const template = baseModel ? await modelChatTemplate(platform, await locateBaseModel(platform, 'hub', baseModel, { loc: ['body', 'model'] })) : undefined;
  if (template !== undefined && !templateSupportsTools(template)) {
    throw invalidField(['body', body.tools ? 'tools' : history], `the chat template of ${JSON.stringify(baseModel)} (the base of ${JSON.stringify(body.model)}) has no tool support: it writes neither tool definitions nor tool calls, so this model cannot be given tools; use a model whose template has them (Qwen2.5, Qwen3, Llama 3.1 or later)`);
  }
  return { names: choice === 'none' ? [] : names, format: template === undefined ? undefined : toolCallFormat(template) };
}

/** Each tool message answers a call an earlier assistant turn made. */
function checkHistory(body: ChatCompletionRequest): void {
  const called = new Set<string>();
  body.messages.forEach((m, i) => {
    if (m.role === 'assistant') for (const call of m.tool_calls ?? []) called.add(call.id);
    if (m.role === 'tool' && !called.has(m.tool_call_id)) {
      throw invalidField(['body', 'messages', String(i), 'tool_call_id'], `messages[${i}] answers tool_call_id ${JSON.stringify(m.tool_call_id)}, but no earlier assistant message made a call with that id`);
    }
  });
}

const CALL_TEXT: Record<ToolCallFormat, { prefix: string; suffix: string; argumentsKey: string }> = {
  hermes: { prefix: '<tool_call>\n', suffix: '\n</tool_call>', argumentsKey: 'arguments' },
  llama3: { prefix: '', suffix: '', argumentsKey: 'parameters' },
};

/** tool_choice required or a named function as the call every answer is made to be: the family's text around JSON
 *  that names the function (one of them, for required) and holds arguments of its parameters schema. */
export function forcedCall(body: ChatCompletionRequest, use: ToolUse | undefined): { schema: Record<string, unknown>; prefix: string; suffix: string } | undefined {
  const choice = body.tool_choice;
  if (!use || !body.tools || choice === undefined || choice === 'none' || choice === 'auto') return undefined;
  if (!use.format) throw invalidField(['body', 'tool_choice'], `tool_choice ${typeof choice === 'string' ? choice : 'naming a function'} needs the call format of ${JSON.stringify(body.model)}'s chat template, which is not at hand yet (a hub model not fetched); use tool_choice auto once, or fetch the model first`);
  const { prefix, suffix, argumentsKey } = CALL_TEXT[use.format];
  const callOf = (tool: NonNullable<ChatCompletionRequest['tools']>[number]) => ({
    type: 'object',
    properties: { name: { const: tool.function.name }, [argumentsKey]: tool.function.parameters ?? { type: 'object' } },
    required: ['name', argumentsKey],
    additionalProperties: false,
  });
  const tools = typeof choice === 'object' ? body.tools.filter((t) => t.function.name === choice.function.name) : body.tools;
  return { schema: tools.length === 1 ? callOf(tools[0]!) : { oneOf: tools.map(callOf) }, prefix, suffix };
}

export interface AnswerCall {
  id: string;
  type: 'function';
  function: ParsedCall;
}

/** An answer's text as OpenAI's message: its calls (each with a new id), and the text that is no call. */
export function readAnswer(text: string, use: ToolUse | undefined, parallel: boolean): { content: string | null; calls: AnswerCall[] } {
  if (!use || use.names.length === 0) return { content: text, calls: [] };
  const { content, calls } = parseToolCalls(text, use.names);
  const kept = parallel ? calls : calls.slice(0, 1);
  return { content, calls: kept.map((call) => ({ id: `call_${randomBytes(12).toString('hex')}`, type: 'function', function: call })) };
}

export type Delta = { content?: string; tool_calls?: Array<{ index: number; id?: string; type?: 'function'; function: { name?: string; arguments?: string } }> };

/** One streamed answer with tools: text streams as it comes unless it may open a call; held text is decided at the
 *  end (calls, or the text after all). */
export class ToolStream {
  private held = '';
  private streaming = false;

  constructor(
    private readonly use: ToolUse,
    private readonly parallel: boolean,
  ) {}

  /** The delta to send now for a new piece of text, if any. */
  add(text: string): Delta | undefined {
    if (this.streaming) return { content: text };
    this.held += text;
    if (mayBeCall(this.held)) return undefined;
    this.streaming = true;
    const out = this.held;
    this.held = '';
    return { content: out };
  }

  /** The deltas that end the answer, and whether it was calls. */
  finish(): { deltas: Delta[]; called: boolean } {
    if (this.held === '') return { deltas: [], called: false };
    const { content, calls } = readAnswer(this.held, this.use, this.parallel);
    if (calls.length === 0) return { deltas: [{ content: this.held }], called: false };
    const deltas: Delta[] = content ? [{ content }] : [];
    calls.forEach((call, index) => {
      deltas.push({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] });
      deltas.push({ tool_calls: [{ index, function: { arguments: call.function.arguments } }] });
    });
    return { deltas, called: true };
  }
}
