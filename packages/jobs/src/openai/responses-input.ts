// A Responses request as the chat completion it runs as: instructions a system message first, input items the
// conversation (a function_call joins the assistant turn it follows, a function_call_output is a tool message),
// function tools and text.format in chat's shapes. What needs stored state or a service not served here is refused
// first, with a 400 naming the field, so a script learns at once what to change.
import { invalidField } from '@ftp/platform';
import type { ChatCompletionRequest, CreateResponseRequest, ResponseInputItem } from '@ftp/schema';

type ChatMessage = ChatCompletionRequest['messages'][number];
type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;

const NOTHING_STORED = 'no response or conversation is stored here; send the whole conversation in input (earlier output items and function_call_output items included)';

/** The 400s for what this stateless service does not do. */
export function refuseUnsupported(body: CreateResponseRequest): void {
  if (body.store === true) throw invalidField(['body', 'store'], `store true is not supported: ${NOTHING_STORED}; send store false or leave it out`);
  if (body.previous_response_id != null) throw invalidField(['body', 'previous_response_id'], `previous_response_id is not supported: ${NOTHING_STORED}`);
  if (body.conversation != null) throw invalidField(['body', 'conversation'], `conversation is not supported: ${NOTHING_STORED}`);
  if (body.background === true) throw invalidField(['body', 'background'], 'background mode is not supported: it needs stored responses to poll; send the request without background and wait for the answer (or stream it)');
  const reasoning = body.reasoning;
  if (reasoning && ((reasoning.effort != null && reasoning.effort !== 'none') || reasoning.summary != null)) {
    throw invalidField(['body', 'reasoning'], 'reasoning settings are not supported: no reasoning model is served here; leave reasoning out');
  }
  (body.tools ?? []).forEach((tool, i) => {
    if (tool.type !== 'function') throw invalidField(['body', 'tools', String(i), 'type'], `built-in tool ${tool.type} is not supported: only function tools are served here (the model calls them and your code runs them)`);
  });
  if (typeof body.input === 'string') return;
  body.input.forEach((item, i) => {
    const at = ['body', 'input', String(i)];
    if (!isKnownItem(item)) throw invalidField([...at, 'type'], `input items of type ${item.type} are not supported: only messages, function_call and function_call_output items are read here`);
    const parts = item.type === 'function_call' ? [] : 'content' in item ? item.content : item.output;
    if (typeof parts === 'string') return;
    parts.forEach((part, j) => {
      if (part.type !== 'input_text' && part.type !== 'output_text') {
        throw invalidField([...at, 'content' in item ? 'content' : 'output', String(j), 'type'], `${part.type} parts are not supported: the models served here read text only; send input_text parts`);
      }
    });
  });
}

type KnownItem = Exclude<ResponseInputItem, { type: string; role?: never; call_id?: never }>;
const isKnownItem = (item: ResponseInputItem): item is KnownItem => item.type === undefined || ['message', 'function_call', 'function_call_output'].includes(item.type);

const textOf = (content: string | Array<{ type: string; text?: string }>) => (typeof content === 'string' ? content : content.map((part) => part.text ?? '').join(''));

/** The conversation as chat messages; each function_call_output answers an earlier function_call. */
function chatMessages(body: CreateResponseRequest): ChatMessage[] {
  const messages: ChatMessage[] = body.instructions ? [{ role: 'system', content: body.instructions }] : [];
  if (typeof body.input === 'string') return [...messages, { role: 'user', content: body.input }];
  const called = new Set<string>();
  body.input.forEach((item, i) => {
    if (!isKnownItem(item)) return; // refused before
    if (item.type === 'function_call') {
      called.add(item.call_id);
      const call = { id: item.call_id, type: 'function' as const, function: { name: item.name, arguments: item.arguments } };
      // The calls of one answer come as items after its text (if any): one assistant turn, as the template renders it.
      const last = messages.at(-1);
      if (last?.role === 'assistant') (last as AssistantMessage).tool_calls = [...((last as AssistantMessage).tool_calls ?? []), call];
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (item.type === 'function_call_output') {
      if (!called.has(item.call_id)) {
        throw invalidField(['body', 'input', String(i), 'call_id'], `input[${i}] answers call_id ${JSON.stringify(item.call_id)}, but no earlier function_call item has that call_id; send the function_call item before its output`);
      }
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: textOf(item.output) });
    } else {
      messages.push({ role: item.role, content: textOf(item.content) } as ChatMessage);
    }
  });
  return messages;
}

/** The chat completion a Responses request runs as (after refuseUnsupported). */
export function toChatRequest(body: CreateResponseRequest): ChatCompletionRequest {
  const tools = (body.tools ?? []).flatMap((tool) =>
    tool.type === 'function' && 'name' in tool
      ? [{ type: 'function' as const, function: { name: tool.name, ...(tool.description != null ? { description: tool.description } : {}), ...(tool.parameters != null ? { parameters: tool.parameters } : {}), strict: tool.strict ?? null } }]
      : [],
  );
  const choice = body.tool_choice;
  if (typeof choice === 'object' && !tools.some((t) => t.function.name === choice.name)) {
    throw invalidField(['body', 'tool_choice', 'name'], `tool_choice names ${JSON.stringify(choice.name)}, which is not in tools (${tools.map((t) => t.function.name).join(', ') || 'none'})`);
  }
  const format = body.text?.format;
  return {
    model: body.model,
    messages: chatMessages(body),
    ...(body.max_output_tokens != null ? { max_completion_tokens: body.max_output_tokens } : {}),
    ...(body.temperature != null ? { temperature: body.temperature } : {}),
    ...(body.top_p != null ? { top_p: body.top_p } : {}),
    ...(body.stream ? { stream: true } : {}),
    ...(tools.length > 0 ? { tools } : {}),
    ...(choice !== undefined ? { tool_choice: typeof choice === 'string' ? choice : { type: 'function' as const, function: { name: choice.name } } } : {}),
    ...(body.parallel_tool_calls != null ? { parallel_tool_calls: body.parallel_tool_calls } : {}),
    ...(format && format.type === 'json_schema'
      ? { response_format: { type: 'json_schema' as const, json_schema: { name: format.name, schema: format.schema, strict: format.strict ?? null } } }
      : format ? { response_format: { type: format.type } } : {}),
    ...(body.use_fast_engine != null ? { use_fast_engine: body.use_fast_engine } : {}),
  };
}
