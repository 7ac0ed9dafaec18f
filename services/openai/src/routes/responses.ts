// POST /v1/responses: OpenAI's Responses API, stateless, as glue over chat completions (decisions.md, "The
// OpenAI-compatible surface"): the request is refused where it needs what is not served, mapped to the chat completion
// it runs as, run on the same path (chat-run.ts), and the answer mapped back: a Response object, or streamed as
// OpenAI's response.* events with sequence numbers. As chat's stream, it opens on its first event, a first use's
// preparation is said in SSE comments first, and a failure after the start is an `error` event, which the SDKs raise.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { requestLifetime } from '@ftp/platform';
import { openaiRoutes } from '@ftp/schema';
import { finished, outputItems, prepareChat, refuseUnsupported, ResponseEvents, responseFrame, toChatRequest, type ResponseEvent } from '@ftp/jobs/openai';
import { runChat, streamChat } from '../chat-run.ts';
import { EventStream } from '../event-stream.ts';

export async function responseRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  routes.route({
    ...openaiRoutes.createResponse,
    handler: async (request, reply) => {
      const body = request.body;
      const lifetime = requestLifetime(reply); // a client gone stops its generation
      refuseUnsupported(body);
      const run = await prepareChat(platform, request.userId, toChatRequest(body), 'input');
      const frame = responseFrame(body);

      if (!body.stream) {
        const { answers, details } = await runChat(platform, run, lifetime);
        const answer = answers[0]!;
        return finished(frame, outputItems(answer), answer.finish_reason, details[0]);
      }

      const stream = new EventStream(reply);
      let sequence = 0;
      const emit = (event: ResponseEvent) => stream.write({ ...event, sequence_number: sequence++ }, event.type);
      const output = new ResponseEvents(emit);
      let begun = false;
      // response.created and in_progress go with the first text, not before: a request that fails before any answer
      // (no worker, a timeout) is then an ordinary error answer, as chat's.
      const begin = () => {
        if (begun) return;
        begun = true;
        emit({ type: 'response.created', response: frame });
        emit({ type: 'response.in_progress', response: frame });
      };
      try {
        const { details, finish_reasons } = await streamChat(platform, run, lifetime, {
          preparing: (text) => stream.comment(`preparing: ${text}`),
          delta: (index, delta) => {
            if (index !== 0) return;
            begin();
            output.add(delta);
          },
        });
        begin();
        const finish = finish_reasons[0]!;
        const response = finished(frame, output.finish(finish === 'length'), finish, details[0]);
        emit({ type: response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', response });
        stream.end();
      } catch (err) {
        if (!stream.started) throw err;
        if (lifetime.aborted) return reply; // nobody left to tell
        request.log.warn({ err }, 'response stream failed after it started');
        emit({ type: 'error', code: 'server_error', message: (err as Error).message, param: null });
        stream.end();
      }
      return reply;
    },
  });
}
