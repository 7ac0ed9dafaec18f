// One chat generation as /v1 runs it, whichever face asked (chat completions, responses): prepared as every chat
// request is (@ftp/jobs/openai chat-requests.ts), sent to a worker through the infer queue, and the answers read back as
// text and OpenAI's tool calls, whole or as they stream. Each face maps its own shapes at its edge.
import type { Platform } from '@ftp/platform';
import { inferQueue, PreparingReport, requestFromWorker, StreamDelta, type GenerationDetail } from '@ftp/jobs/queues';
import { readAnswers, ToolStream, type ChatAnswer, type ChatRun, type Delta } from '@ftp/jobs/openai';

/** The answers, whole. `lifetime` (the HTTP request's, requestLifetime) aborted, the generation stops on the worker. */
export async function runChat(platform: Platform, run: ChatRun, lifetime: AbortSignal): Promise<{ answers: ChatAnswer[]; details: GenerationDetail[] }> {
  const { results, details } = await requestFromWorker(platform, inferQueue, run.payload, undefined, 'the chat completion', { signal: lifetime });
  return { answers: readAnswers(run, results, details), details };
}

export interface ChatStreamListener {
  /** What the worker does before the first token (a first use's GGUF conversion, an engine starting). */
  preparing(text: string): void;
  /** The next piece of answer `index`, in chat.completion.chunk's delta shape (text, or a call's id, name, arguments). */
  delta(index: number, delta: Delta): void;
}

/** The answers as they are generated, to `listener`; resolves when all have ended, with how each ended. `lifetime` as
 *  runChat's: a client that stops reading the stream stops its generation. */
export async function streamChat(platform: Platform, run: ChatRun, lifetime: AbortSignal, listener: ChatStreamListener): Promise<{ details: GenerationDetail[]; finish_reasons: ChatAnswer['finish_reason'][] }> {
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
  const { details } = await requestFromWorker(platform, inferQueue, run.payload, undefined, 'the chat completion', { onReport, signal: lifetime });
  const finish_reasons = details.map((detail, index) => {
    const ending = answers[index]?.finish() ?? { deltas: [], called: false };
    for (const delta of ending.deltas) listener.delta(index, delta);
    return ending.called ? ('tool_calls' as const) : detail.finish_reason;
  });
  return { details, finish_reasons };
}
