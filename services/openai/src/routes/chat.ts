// POST /v1/chat/completions: the model id is resolved to a job, checkpoint or base model, the conversation goes to a
// worker through the infer queue (n copies, seeds seed … seed + n − 1), and the answer comes back as OpenAI's
// chat.completion, or streamed as chat.completion.chunk events ending with [DONE]. Usage and finish_reason are the
// engine's own counts. Headers of a stream are sent with its first text, so a failure before any text is an ordinary
// error answer; one after it is an `error` event, which the SDKs raise. A model's first use (a GGUF conversion, an
// engine starting) is said in SSE comments before the first chunk (`: preparing …`): the SDKs skip comments, ftune and
// the console show them, and the stream is open from the first one.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { newId, requestLifetime } from '@ftp/platform';
import { openaiRoutes, type ChatCompletionChunk } from '@ftp/schema';
import { chatCompletionObject, chatUsage as usage, prepareChat } from '@ftp/jobs/openai';
import { runChat, streamChat } from '../chat-run.ts';
import { EventStream } from '../event-stream.ts';

export async function chatRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  routes.route({
    ...openaiRoutes.createChatCompletion,
    handler: async (request, reply) => {
      const body = request.body;
      const lifetime = requestLifetime(reply); // a client gone stops its generation
      const run = await prepareChat(platform, request.userId, body);
      const frame = { id: newId('chatcmpl'), object: 'chat.completion.chunk' as const, created: Math.floor(Date.now() / 1000), model: body.model, system_fingerprint: null };

      if (!body.stream) {
        const { answers, details } = await runChat(platform, run, lifetime);
        return chatCompletionObject(frame.id, body.model, answers, details);
      }

      const stream = new EventStream(reply);
      const send = (choices: ChatCompletionChunk['choices'], usage?: ChatCompletionChunk['usage']) => stream.write({ ...frame, choices, ...(usage !== undefined ? { usage } : {}) });
      const begun = new Set<number>();
      const delta = (index: number, delta: ChatCompletionChunk['choices'][number]['delta'], finish: ChatCompletionChunk['choices'][number]['finish_reason'] = null) => {
        const role = begun.has(index) ? {} : { role: 'assistant' as const };
        begun.add(index);
        send([{ index, delta: { ...role, ...delta }, finish_reason: finish, logprobs: null }]);
      };
      try {
        const { details, finish_reasons } = await streamChat(platform, run, lifetime, { preparing: (text) => stream.comment(`preparing: ${text}`), delta });
        finish_reasons.forEach((finish, index) => delta(index, {}, finish));
        if (body.stream_options?.include_usage) send([], usage(details));
        stream.write('[DONE]');
        stream.end();
      } catch (err) {
        if (!stream.started) throw err;
        if (lifetime.aborted) return reply; // nobody left to tell
        request.log.warn({ err }, 'chat completion stream failed after it started');
        stream.write({ error: { message: (err as Error).message, type: 'server_error', param: null, code: null } });
        stream.end();
      }
      return reply;
    },
  });
}
