// A chat answer as OpenAI's Response object: its text a message item, each call a function_call item, the engine's
// counts as usage; and, streamed, chat's deltas as the Responses events OpenAI sends (each item added, its text or
// arguments in deltas, done), so the SDKs' stream accumulators build the same response the last event carries.
import { randomBytes } from 'node:crypto';
import type { CreateResponseRequest, ResponseObject, ResponseOutputItem, ResponseStreamEventData } from '@ftp/schema';
import type { ChatAnswer } from './chat-requests.ts';
import type { Delta } from './chat-tools.ts';
import type { GenerationDetail } from '../queues/index.ts';

const itemId = (prefix: 'msg' | 'fc') => `${prefix}_${randomBytes(16).toString('hex')}`;

type Message = Extract<ResponseOutputItem, { type: 'message' }>;
type FunctionCall = Extract<ResponseOutputItem, { type: 'function_call' }>;
const textPart = (text: string) => ({ type: 'output_text' as const, text, annotations: [], logprobs: [] });

/** The response's frame, as every event that carries the response shows it: what was asked, echoed. */
export function responseFrame(body: CreateResponseRequest): ResponseObject {
  const format = body.text?.format;
  return {
    id: `resp_${randomBytes(24).toString('hex')}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'in_progress',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: body.model,
    output: [],
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: body.temperature ?? 1,
    text: { format: format ?? { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: (body.tools ?? []).flatMap((tool) => (tool.type === 'function' && 'name' in tool ? [{ type: 'function' as const, name: tool.name, description: tool.description ?? null, parameters: tool.parameters ?? null, strict: tool.strict ?? null }] : [])),
    top_p: body.top_p ?? 1,
    truncation: 'disabled',
    usage: null,
    metadata: body.metadata ?? {},
    user: body.user ?? null,
  };
}

/** The response once the answer has ended: completed, or incomplete when cut at max_output_tokens. */
export function finished(frame: ResponseObject, output: ResponseOutputItem[], finish: ChatAnswer['finish_reason'], detail: GenerationDetail | undefined): ResponseObject {
  const cut = finish === 'length';
  const input = detail?.prompt_tokens ?? 0;
  const produced = detail?.completion_tokens ?? 0;
  return {
    ...frame,
    status: cut ? 'incomplete' : 'completed',
    incomplete_details: cut ? { reason: 'max_output_tokens' } : null,
    output: output.map((item) => (item.type === 'message' ? { ...item, status: cut ? 'incomplete' : 'completed' } : item)),
    usage: { input_tokens: input, input_tokens_details: { cached_tokens: 0 }, output_tokens: produced, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: input + produced },
  };
}

/** A whole answer's output items: its text (when there is any, or no call), then its calls. */
export function outputItems(answer: ChatAnswer): ResponseOutputItem[] {
  const items: ResponseOutputItem[] = [];
  if (answer.content || answer.calls.length === 0) items.push({ type: 'message', id: itemId('msg'), role: 'assistant', status: 'completed', content: [textPart(answer.content ?? '')] });
  for (const call of answer.calls) items.push({ type: 'function_call', id: itemId('fc'), call_id: call.id, name: call.function.name, arguments: call.function.arguments, status: 'completed' });
  return items;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type ResponseEvent = DistributiveOmit<ResponseStreamEventData, 'sequence_number'>;

/** Chat's streamed deltas of one answer as Responses events, in order: `emit` is given each; `items` is the output. */
export class ResponseEvents {
  readonly items: ResponseOutputItem[] = [];
  /** The item deltas go to now: the message being written, or the call whose arguments are coming. */
  private open: { index: number; item: Message } | { index: number; item: FunctionCall } | undefined;
  /** Chat's index of each call of the answer → its output index. */
  private readonly calls = new Map<number, number>();

  constructor(private readonly emit: (event: ResponseEvent) => void) {}

  add(delta: Delta): void {
    if (delta.content) this.text(delta.content);
    for (const piece of delta.tool_calls ?? []) {
      if (piece.id !== undefined) {
        this.close();
        const item: FunctionCall = { type: 'function_call', id: itemId('fc'), call_id: piece.id, name: piece.function.name ?? '', arguments: '', status: 'in_progress' };
        this.calls.set(piece.index, this.start(item));
      }
      const index = this.calls.get(piece.index);
      const item = index === undefined ? undefined : (this.items[index] as FunctionCall);
      if (item && piece.function.arguments) {
        item.arguments += piece.function.arguments;
        this.emit({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index: index!, delta: piece.function.arguments });
      }
    }
  }

  /** Ends the open item (`cut`: its text ended at max_output_tokens); the output. */
  finish(cut: boolean): ResponseOutputItem[] {
    if (this.items.length === 0) this.start({ type: 'message', id: itemId('msg'), role: 'assistant', status: 'in_progress', content: [] });
    this.close(cut);
    return this.items;
  }

  private text(text: string): void {
    if (this.open?.item.type !== 'message') {
      this.close();
      this.start({ type: 'message', id: itemId('msg'), role: 'assistant', status: 'in_progress', content: [] });
    }
    const { index, item } = this.open as { index: number; item: Message };
    if (item.content.length === 0) {
      item.content.push(textPart(''));
      this.emit({ type: 'response.content_part.added', item_id: item.id, output_index: index, content_index: 0, part: textPart('') });
    }
    item.content[0]!.text += text;
    this.emit({ type: 'response.output_text.delta', item_id: item.id, output_index: index, content_index: 0, delta: text, logprobs: [] });
  }

  private start(item: Message | FunctionCall): number {
    const index = this.items.push(item) - 1;
    this.emit({ type: 'response.output_item.added', output_index: index, item: structuredClone(item) });
    this.open = item.type === 'message' ? { index, item } : { index, item };
    return index;
  }

  private close(cut = false): void {
    const open = this.open;
    if (!open) return;
    this.open = undefined;
    const { index, item } = open;
    if (item.type === 'message') {
      if (item.content.length === 0) {
        item.content.push(textPart(''));
        this.emit({ type: 'response.content_part.added', item_id: item.id, output_index: index, content_index: 0, part: textPart('') });
      }
      const text = item.content[0]!.text;
      this.emit({ type: 'response.output_text.done', item_id: item.id, output_index: index, content_index: 0, text, logprobs: [] });
      this.emit({ type: 'response.content_part.done', item_id: item.id, output_index: index, content_index: 0, part: textPart(text) });
    } else {
      this.emit({ type: 'response.function_call_arguments.done', item_id: item.id, output_index: index, name: item.name, arguments: item.arguments });
    }
    item.status = cut && item.type === 'message' ? 'incomplete' : 'completed';
    this.emit({ type: 'response.output_item.done', output_index: index, item: structuredClone(item) });
  }
}
