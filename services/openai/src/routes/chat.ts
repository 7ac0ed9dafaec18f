// POST /v1/chat/completions: the model id is resolved to a job, checkpoint or base model, the conversation goes to a
// worker through the infer queue (n copies, seeds seed … seed + n − 1), and the answer comes back as OpenAI's
// chat.completion, or streamed as chat.completion.chunk events ending with [DONE]. Usage and finish_reason are the
// engine's own counts. Headers of a stream are sent with its first text, so a failure before any text is an ordinary
// error answer; one after it is an `error` event, which the SDKs raise. A model's first use (a GGUF conversion, an
// engine starting) is said in SSE comments before the first chunk (`: preparing …`): the SDKs skip comments, ftune and
// the console show them, and the stream is open from the first one.
import { randomInt } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { newId } from '@ftp/platform';
import { openaiRoutes, type ChatCompletionChunk, type ChatCompletionRequest } from '@ftp/schema';
import { inferQueue, resolveModelName, PreparingReport, requestFromWorker, StreamDelta, type GenerationDetail, type GenerationSettings, type InferPayload, type PlainMessage } from '@ftp/jobs';
import { checkTools, forcedCall, readAnswer, ToolStream, type ToolUse } from '../chat-tools.ts';

/** max_tokens when the request names none: the fast engine also stops where the context ends. */
const DEFAULT_MAX_TOKENS = 512;

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

function usage(details: GenerationDetail[]) {
  const prompt = details[0]?.prompt_tokens ?? 0; // the same prompt for every choice, counted once as OpenAI does
  const completion = details.reduce((sum, d) => sum + d.completion_tokens, 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** Writes server-sent chunks; opened (headers sent) on the first one. */
class ChunkStream {
  private opened = false;
  constructor(
    private readonly reply: FastifyReply,
    private readonly frame: Omit<ChatCompletionChunk, 'choices' | 'usage'>,
  ) {}

  get started(): boolean {
    return this.opened;
  }

  send(choices: ChatCompletionChunk['choices'], usage?: ChatCompletionChunk['usage']): void {
    this.write({ ...this.frame, choices, ...(usage !== undefined ? { usage } : {}) });
  }

  /** An SSE comment: a line for people, which event-stream parsers (the SDKs') skip. */
  comment(text: string): void {
    this.open();
    this.reply.raw.write(`: ${text.replace(/[\r\n]+/g, ' ')}\n\n`);
  }

  write(data: unknown): void {
    this.open();
    this.reply.raw.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  }

  private open(): void {
    if (!this.opened) {
      this.opened = true;
      this.reply.hijack();
      this.reply.raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': String(this.reply.request.id) });
    }
  }

  end(): void {
    this.reply.raw.end();
  }
}

export async function chatRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  routes.route({
    ...openaiRoutes.createChatCompletion,
    handler: async (request, reply) => {
      const body = request.body;
      const model = await resolveModelName(platform, request.userId, body.model, body.use_fast_engine ?? undefined);
      const tools = await checkTools(platform, model, body);
      const parallel = body.parallel_tool_calls !== false;
      const n = body.n ?? 1;
      const conversation = plainMessages(body.messages);
      const payload: InferPayload = { userId: request.userId, model: model.choice, conversations: Array.from({ length: n }, () => conversation), generation: generationSettings(body, tools) };
      const frame = { id: newId('chatcmpl'), object: 'chat.completion.chunk' as const, created: Math.floor(Date.now() / 1000), model: body.model, system_fingerprint: null };

      if (!body.stream) {
        const { results, details } = await requestFromWorker(platform, inferQueue, payload, undefined, 'the chat completion');
        return {
          ...frame,
          object: 'chat.completion' as const,
          choices: results.map((text, index) => {
            const { content, calls } = readAnswer(text, tools, parallel);
            return {
              index,
              message: { role: 'assistant' as const, content, refusal: null, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
              finish_reason: calls.length > 0 ? ('tool_calls' as const) : details[index]!.finish_reason,
              logprobs: null,
            };
          }),
          usage: usage(details),
        };
      }

      const stream = new ChunkStream(reply, frame);
      const begun = new Set<number>();
      const answers = Array.from({ length: n }, () => (tools && tools.names.length > 0 ? new ToolStream(tools, parallel) : undefined));
      const send = (index: number, delta: ChatCompletionChunk['choices'][number]['delta'], finish: ChatCompletionChunk['choices'][number]['finish_reason'] = null) => {
        const role = begun.has(index) ? {} : { role: 'assistant' as const };
        begun.add(index);
        stream.send([{ index, delta: { ...role, ...delta }, finish_reason: finish, logprobs: null }]);
      };
      const onReport = (data: unknown) => {
        const preparing = PreparingReport.safeParse(data);
        if (preparing.success) return stream.comment(`preparing: ${preparing.data.preparing}`);
        const delta = StreamDelta.safeParse(data);
        if (!delta.success || delta.data.text === '') return;
        const { index, text } = delta.data;
        const tool = answers[index];
        const out = tool ? tool.add(text) : { content: text };
        if (out) send(index, out);
      };
      try {
        const { details } = await requestFromWorker(platform, inferQueue, payload, undefined, 'the chat completion', { onReport });
        details.forEach((detail, index) => {
          const ending = answers[index]?.finish() ?? { deltas: [], called: false };
          for (const delta of ending.deltas) send(index, delta);
          send(index, {}, ending.called ? 'tool_calls' : detail.finish_reason);
        });
        if (body.stream_options?.include_usage) stream.send([], usage(details));
        stream.write('[DONE]');
        stream.end();
      } catch (err) {
        if (!stream.started) throw err;
        request.log.warn({ err }, 'chat completion stream failed after it started');
        stream.write({ error: { message: (err as Error).message, type: 'server_error', param: null, code: null } });
        stream.end();
      }
      return reply;
    },
  });
}
