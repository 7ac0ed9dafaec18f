// A chat completion request as the engines take it, whoever runs it (/v1 chat completions and responses through the
// infer queue, a batch's lines on a worker): the model name resolved for the caller, tools checked against its
// template, the messages as plain text, the sampling settings; and the engine's texts read back as OpenAI's answers
// (text, or tool calls in the family's format).
import { randomInt } from 'node:crypto';
import type { Platform } from '@ftp/platform';
import { CHAT_DEFAULT_MAX_TOKENS, type ChatCompletionRequest, type PlainMessage } from '@ftp/schema';
import { checkTools, forcedCall, readAnswer, type AnswerCall, type ToolUse } from './chat-tools.ts';
import { resolveModelName } from '../models/index.ts';
import type { GenerationDetail, GenerationSettings, InferPayload } from '../queues/index.ts';

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
    max_new_tokens: body.max_completion_tokens ?? body.max_tokens ?? CHAT_DEFAULT_MAX_TOKENS,
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

/** The engine's texts as OpenAI's answers: text, or the calls they make (finish_reason tool_calls). */
export function readAnswers(run: ChatRun, results: readonly string[], details: readonly GenerationDetail[]): ChatAnswer[] {
  return results.map((text, index) => {
    const { content, calls } = readAnswer(text, run.tools, run.parallel);
    return { content, calls, finish_reason: calls.length > 0 ? ('tool_calls' as const) : details[index]!.finish_reason };
  });
}

/** OpenAI's usage of one request: the prompt counted once (every choice has the same), completions summed. */
export function chatUsage(details: readonly GenerationDetail[]) {
  const prompt = details[0]?.prompt_tokens ?? 0;
  const completion = details.reduce((sum, d) => sum + d.completion_tokens, 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
