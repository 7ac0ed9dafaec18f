// Chat over the OpenAI-compatible surface (/v1 on the openai service): the only API that streams generated text
// as it comes (the inference service answers batches whole), and the one that names models the way people do:
// a base model id, or a job's fine-tuned model `ft:<base>:<suffix>:<job_id>`.
import type { ChatCompletion, ChatCompletionChunk } from '@ftp/schema';
import { CliError } from './errors.ts';
import { segment, type Api } from './http.ts';
import { parseSse } from './sse.ts';

export interface ChatTurn {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface GenerationOptions {
  temperature?: number | undefined;
  maxTokens?: number | undefined;
}

function requestBody(model: string, messages: readonly ChatTurn[], options: GenerationOptions, stream: boolean): Record<string, unknown> {
  return {
    model,
    messages,
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(options.maxTokens !== undefined ? { max_tokens: options.maxTokens } : {}),
    ...(stream ? { stream: true } : {}),
  };
}

/** The /v1 model id for what the user typed: the id itself when the API knows it, or the fine-tuned model of a job
 *  when a job_id was given. An unknown name gets the API's own 404 sentence. */
export async function resolveChatModel(api: Api, model: string): Promise<string> {
  const { data } = await api.json<{ data: Array<{ id: string }> }>('openai', 'GET', '/v1/models');
  if (data.some((m) => m.id === model)) return model;
  const tuned = data.find((m) => m.id.startsWith('ft:') && m.id.endsWith(`:${model}`));
  if (tuned) return tuned.id;
  // Not listed (a hub model not yet in the store): the API decides.
  return (await api.json<{ id: string }>('openai', 'GET', `/v1/models/${segment(model)}`)).id;
}

/** One answer, whole: the API's chat.completion document (what --json prints). */
export async function completeChat(api: Api, model: string, messages: readonly ChatTurn[], options: GenerationOptions): Promise<ChatCompletion> {
  return api.json<ChatCompletion>('openai', 'POST', '/v1/chat/completions', { kind: 'work', json: requestBody(model, messages, options, false) });
}

/** The comment prefix of the service's preparation news in a chat stream. */
const PREPARING = 'preparing: ';

/** One answer, streamed: `onText` gets each piece of text as it is generated, `onPreparing` what the service does
 *  before the first one on a model's first use (a GGUF conversion, an engine starting); returns the whole text. */
export async function streamChat(
  api: Api,
  model: string,
  messages: readonly ChatTurn[],
  options: GenerationOptions,
  onText: (text: string) => void,
  signal?: AbortSignal,
  onPreparing?: (message: string) => void,
): Promise<string> {
  const res = await api.send('openai', 'POST', '/v1/chat/completions', {
    kind: 'stream',
    json: requestBody(model, messages, options, true),
    headers: { accept: 'text/event-stream' },
    ...(signal ? { signal } : {}),
  });
  if (!res.body) throw new CliError('the chat answer has no body');
  let text = '';
  const onComment = onPreparing
    ? (comment: string) => {
        if (comment.startsWith(PREPARING)) onPreparing(comment.slice(PREPARING.length));
      }
    : undefined;
  for await (const message of parseSse(res.body, onComment)) {
    if (message.data === '[DONE]') return text;
    const chunk = JSON.parse(message.data) as ChatCompletionChunk | { error: { message: string } };
    // A failure after the first text comes as an event, the way OpenAI's SDKs expect it.
    if ('error' in chunk) throw new CliError(`the answer broke off: ${chunk.error.message}`);
    const piece = chunk.choices[0]?.delta.content;
    if (piece) {
      text += piece;
      onText(piece);
    }
  }
  throw new CliError('the answer broke off: the stream ended before [DONE]');
}
