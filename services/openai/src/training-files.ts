// OpenAI's fine-tuning files, read line by line as OpenAI validates them, and turned into this project's processed
// records: chat lines {"messages": [...]} become language_modeling records (every turn kept; an assistant message's
// `weight` 0 or 1 kept, and honoured by the core's label mask; `tools`, assistant `tool_calls` and `tool` messages
// kept for the model's own chat template, with `parallel_tool_calls` false allowing one call a turn); preference lines {"input": {"messages"},
// "preferred_output", "non_preferred_output"} become preference records {prompt, chosen, rejected}; reinforcement lines
// {"messages": [...], <any other fields>} become prompt records {prompt, <the other fields>}: the fields are the
// grader's item ({{item.<field>}}).
// The first bad line stops the reading with its number and what is wrong.
import type { Platform, RawDatasetRow } from '@ftp/platform';
import { LineTooLong, lonelySurrogateAt, numberedLines, PendingCalls, readToolCalls, readTools, type ToolCall, type ToolDefinition } from '@ftp/datasets';

export type FileKind = 'chat' | 'preference' | 'prompt';

type Message =
  | { role: 'system' | 'user' | 'assistant'; content: string; weight?: 0 | 1; tool_calls?: ToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string };

/** What a chat line allows beyond plain turns: its tools and whether a turn may call several at once. */
interface ToolContext {
  tools: ToolDefinition[] | undefined;
  parallel: boolean;
}

/** A line that is not what OpenAI's format allows: its 1-based number and the sentence to fix it. */
export class InvalidLine extends Error {
  constructor(
    readonly line: number,
    what: string,
  ) {
    super(`line ${line}: ${what}`);
  }
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant']);
const LEGACY_FUNCTIONS = 'the legacy function-calling format (functions, function_call, function messages) is not supported; write tools, tool_calls and tool messages';
const PREFERENCE_TOOLS = 'tools in preference lines are not supported; train tool calls with a supervised job';

function text(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content) && content.length > 0 && content.every((p) => p && typeof p === 'object' && (p as { type?: unknown }).type === 'text' && typeof (p as { text?: unknown }).text === 'string')) {
    return content.map((p) => (p as { text: string }).text).join('');
  }
  throw new Error(`${where}.content must be a string or a list of {"type": "text", "text": …} parts`);
}

function readMessages(value: unknown, where: string, allowWeight: boolean, context?: ToolContext): Message[] {
  if (!Array.isArray(value) || value.length === 0) throw new Error(`${where} must be a non-empty list of messages`);
  const pending = new PendingCalls();
  return value.map((raw, i) => {
    const at = `${where}[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${at} must be an object with role and content`);
    const message = raw as Record<string, unknown>;
    if ('function_call' in message || message['role'] === 'function') throw new Error(LEGACY_FUNCTIONS);
    if (message['role'] === 'tool') {
      if (!context) throw new Error(PREFERENCE_TOOLS);
      const unknown = Object.keys(message).filter((k) => !['role', 'content', 'tool_call_id'].includes(k));
      if (unknown.length > 0) throw new Error(`${at} has unknown key ${JSON.stringify(unknown[0])}`);
      return { role: 'tool', tool_call_id: pending.answer(message['tool_call_id'], at), content: text(message['content'], at) };
    }
    if (typeof message['role'] !== 'string' || !ROLES.has(message['role'])) throw new Error(`${at}.role must be one of system, developer, user, assistant${context ? ', tool' : ''}`);
    const unknown = Object.keys(message).filter((k) => !['role', 'content', 'name', 'weight', 'tool_calls'].includes(k));
    if (unknown.length > 0) throw new Error(`${at} has unknown key ${JSON.stringify(unknown[0])}`);
    const role = message['role'] === 'developer' ? 'system' : (message['role'] as 'system' | 'user' | 'assistant');
    const calls = 'tool_calls' in message ? toolCalls(message, role, at, context) : undefined;
    const out: Message = { role, content: calls && message['content'] == null ? '' : text(message['content'], at) };
    if (calls) {
      pending.called(calls);
      out.tool_calls = calls;
    }
    if ('weight' in message) {
      if (!allowWeight || role !== 'assistant') throw new Error(`${at}.weight is only allowed on assistant messages`);
      if (message['weight'] !== 0 && message['weight'] !== 1) throw new Error(`${at}.weight must be 0 or 1`);
      out.weight = message['weight'];
    }
    return out;
  });
}

function toolCalls(message: Record<string, unknown>, role: string, at: string, context: ToolContext | undefined): ToolCall[] {
  if (!context) throw new Error(PREFERENCE_TOOLS);
  if (role !== 'assistant') throw new Error(`${at}.tool_calls is only allowed on assistant messages`);
  const calls = readToolCalls(message['tool_calls'], `${at}.tool_calls`, context.tools);
  if (calls.length > 1 && !context.parallel) throw new Error(`${at} makes ${calls.length} tool calls, but the line sets parallel_tool_calls false (one call per turn); split them into turns or drop parallel_tool_calls`);
  return calls;
}

/** One line as a processed record, or an Error saying what is wrong with it. */
function recordOf(kind: FileKind, row: Record<string, unknown>): Record<string, unknown> {
  if (kind === 'chat') {
    if ('functions' in row) throw new Error(LEGACY_FUNCTIONS);
    if (!('messages' in row)) throw new Error('a supervised job needs chat lines with "messages" (preference lines with "input", "preferred_output" and "non_preferred_output" train with method dpo)');
    const unknown = Object.keys(row).filter((k) => !['messages', 'tools', 'parallel_tool_calls', 'metadata'].includes(k));
    if (unknown.length > 0) throw new Error(`unknown key ${JSON.stringify(unknown[0])}`);
    if ('parallel_tool_calls' in row && typeof row['parallel_tool_calls'] !== 'boolean') throw new Error('parallel_tool_calls must be true or false');
    const tools = 'tools' in row ? readTools(row['tools'], 'tools') : undefined;
    const messages = readMessages(row['messages'], 'messages', true, { tools, parallel: row['parallel_tool_calls'] !== false });
    if (!messages.some((m) => m.role === 'assistant' && m.weight !== 0)) throw new Error('no assistant message to train on (at least one assistant message without weight 0 is needed)');
    if (messages.at(-1)!.role !== 'assistant') throw new Error('the last message must be the assistant’s (it is what training learns); end the line with an assistant message');
    return tools ? { messages, tools } : { messages };
  }
  if (kind === 'prompt') {
    if (!('messages' in row)) throw new Error('a reinforcement job needs lines with "messages" (the prompt) and the fields its grader reads as {{item.<field>}}');
    if ('prompt' in row) throw new Error('"prompt" is the name the prompt is kept under here; rename that field');
    const tools = 'tools' in row ? readTools(row['tools'], 'tools') : undefined;
    const prompt = readMessages(row['messages'], 'messages', false, { tools, parallel: true });
    if (prompt.at(-1)!.role === 'assistant') throw new Error('messages must end with the user’s turn: the model samples the answer, the grader scores it');
    const { messages: _messages, ...item } = row;
    return { prompt, ...item };
  }
  for (const key of ['input', 'preferred_output', 'non_preferred_output']) {
    if (!(key in row)) throw new Error(`a dpo job needs preference lines with ${JSON.stringify(key)} (input, preferred_output and non_preferred_output)`);
  }
  const input = row['input'];
  if (!input || typeof input !== 'object' || Array.isArray(input)) throw new Error('input must be an object with "messages"');
  if ('tools' in input) throw new Error(PREFERENCE_TOOLS);
  const prompt = readMessages((input as { messages?: unknown }).messages, 'input.messages', false);
  if (prompt.at(-1)?.role === 'assistant') throw new Error('input.messages must end with a user message (the answers are preferred_output and non_preferred_output)');
  const answer = (key: string) => {
    const output = readMessages(row[key], key, false);
    if (output.length !== 1 || output[0]!.role !== 'assistant') throw new Error(`${key} must be a list of exactly one assistant message`);
    return output;
  };
  return { prompt, chosen: answer('preferred_output'), rejected: answer('non_preferred_output') };
}

/**
 * Reads an uploaded file's lines in order, checks each against OpenAI's format of `kind` (chat for supervised jobs,
 * preference for dpo, prompt for reinforcement) and yields the processed records. Throws InvalidLine at the first bad line.
 */
export async function* readTrainingFile(platform: Platform, file: RawDatasetRow, kind: FileKind): AsyncGenerator<Record<string, unknown>> {
  let last = 0;
  let seen = 0;
  try {
    for await (const { number, text } of numberedLines(await platform.blobs.get(file.blob_key))) {
      last = number;
      if (!text.trim()) continue;
      yield recordOfLine(kind, number, text);
      seen += 1;
    }
  } catch (err) {
    if (err instanceof LineTooLong) throw new InvalidLine(err.line, `is longer than ${err.limit}; each line must be one example`);
    throw err;
  }
  if (seen === 0) throw new InvalidLine(Math.max(last, 1), 'the file has no examples');
}

function recordOfLine(kind: FileKind, number: number, line: string): Record<string, unknown> {
  let row: unknown;
  try {
    row = JSON.parse(line);
  } catch (err) {
    throw new InvalidLine(number, `not valid JSON (${(err as Error).message}); each line must be one JSON object`);
  }
  if (!row || typeof row !== 'object' || Array.isArray(row)) throw new InvalidLine(number, 'must be a JSON object');
  const surrogate = lonelySurrogateAt(row);
  if (surrogate !== undefined) throw new InvalidLine(number, surrogate);
  try {
    return recordOf(kind, row as Record<string, unknown>);
  } catch (err) {
    throw new InvalidLine(number, (err as Error).message);
  }
}
