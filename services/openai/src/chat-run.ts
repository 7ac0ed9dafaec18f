// One chat generation as /v1 runs it, whichever face asked (chat completions, responses): the model name resolved for
// the caller, tools checked against its template, the conversation sent to a worker through the infer queue, and the
// answers read back as text and OpenAI's tool calls, whole or as they stream. Each face maps its own shapes at its edge.
import { randomInt } from 'node:crypto';
import type { Platform } from '@ftp/platform';
import type { ChatCompletionRequest } from '@ftp/schema';
import { inferQueue, resolveModelName, PreparingReport, requestFromWorker, StreamDelta, type GenerationDetail, type GenerationSettings, type InferPayload, type PlainMessage } from '@ftp/jobs';
import { checkTools, forcedCall, readAnswer, ToolStream, type AnswerCall, type Delta, type ToolUse } from './chat-tools.ts';

/** max_tokens when the request names none: the fast engine also stops where the context ends. */
const DEFAULT_MAX_TOKENS = 512;

export interface ChatRun {
  payload: InferPayload;
  tools: ToolUse | undefined;
  parallel: boolean;
}

export interface ChatAnswer {
  content: string | null;
  calls: AnswerCall[];
  finish_reason: 'stop' | 'length' | 'tool_calls';
}

function plainMessages(messages: ChatCompletionRequest['messages']): PlainMessage[] {
  return messages.map((m) => {
    const content = m.content == null ? '' : typeof m.content === 'string' ? m.content : m.content.map((part) => part.text).join('');
    if (m.role === 'tool') return { role: 'tool', content, tool_call_id: m.tool_call_id };
    if (m.role === 'assistant') return { role: 'assistant', content, ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}) };
    return { role: m.role === 'developer' ? 'system' : m.role, content };
  });
}

function generationSettings(body: ChatCompletionRequest, tools: ToolUse | undefined): GenerationSettings {
  const temperature = body.temperature ?? 1;
  const stop = body.stop == null ? undefined : Array.isArray(body.stop) ? body.stop : [body.stop];
  const format = body.response_format;
  const forced = forcedCall(body, tools);
  return {
    max_new_tokens: body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS,
    temperature,
    ...(body.top_p != null ? { top_p: body.top_p } : {}),
    // Sampling without a seed is seeded at random, as OpenAI's is; greedy decoding needs none.
    seed: body.seed ?? randomInt(2 ** 31 - 1),
    ...(stop ? { stop } : {}),
    ...(format && format.type !== 'text'
      ? { response_format: format.type === 'json_object' ? { type: 'json_object' as const } : { type: 'json_schema' as const, schema: format.json_schema.schema ?? {} } }
      : {}),
    ...(body.tools ? { tools: body.tools } : {}),
    ...(forced ? { forced_call: forced } : {}),
    ...(body.stream ? { stream: true } : {}),
  };
}

/** Everything checked that can be before any work is queued: the model (404 for an unknown or another user's), the
 *  tools against its template (400; `history` is the field the asking face holds the conversation in). */
export async function prepareChat(platform: Platform, userId: string, body: ChatCompletionRequest, history = 'messages'): Promise<ChatRun> {
  const model = await resolveModelName(platform, userId, body.model, body.use_fast_engine ?? undefined);
  const tools = await checkTools(platform, model, body, history);
  const conversation = plainMessages(body.messages);
  const n = body.n ?? 1;
  const payload: InferPayload = { userId, model: model.choice, conversations: Array.from({ length: n }, () => conversation), generation: generationSettings(body, tools) };
  return { payload, tools, parallel: body.parallel_tool_calls !== false };
}

/** The answers, whole. */
export async function runChat(platform: Platform, run: ChatRun): Promise<{ answers: ChatAnswer[]; details: GenerationDetail[] }> {
  const { results, details } = await requestFromWorker(platform, inferQueue, run.payload, undefined, 'the chat completion');
  const answers = results.map((text, index) => {
    const { content, calls } = readAnswer(text, run.tools, run.parallel);
    return { content, calls, finish_reason: calls.length > 0 ? ('tool_calls' as const) : details[index]!.finish_reason };
  });
  return { answers, details };
}

export interface ChatStreamListener {
  /** What the worker does before the first token (a first use's GGUF conversion, an engine starting). */
  preparing(text: string): void;
  /** The next piece of answer `index`, in chat.completion.chunk's delta shape (text, or a call's id, name, arguments). */
  delta(index: number, delta: Delta): void;
}

/** The answers as they are generated, to `listener`; resolves when all have ended, with how each ended. */
export async function streamChat(platform: Platform, run: ChatRun, listener: ChatStreamListener): Promise<{ details: GenerationDetail[]; finish_reasons: ChatAnswer['finish_reason'][] }> {
  const n = run.payload.conversations.length;
  const answers = Array.from({ length: n }, () => (run.tools && run.tools.names.length > 0 ? new ToolStream(run.tools, run.parallel) : undefined));
  const onReport = (data: unknown) => {
    const preparing = PreparingReport.safeParse(data);
    if (preparing.success) return listener.preparing(preparing.data.preparing);
    const piece = StreamDelta.safeParse(data);
    if (!piece.success || piece.data.text === '') return;
    const { index, text } = piece.data;
    const tool = answers[index];
    const out = tool ? tool.add(text) : { content: text };
    if (out) listener.delta(index, out);
  };
  const { details } = await requestFromWorker(platform, inferQueue, run.payload, undefined, 'the chat completion', { onReport });
  const finish_reasons = details.map((detail, index) => {
    const ending = answers[index]?.finish() ?? { deltas: [], called: false };
    for (const delta of ending.deltas) listener.delta(index, delta);
    return ending.called ? ('tool_calls' as const) : detail.finish_reason;
  });
  return { details, finish_reasons };
}
