// Route contracts of /v1/chat/completions.
import { ChatCompletion, ChatCompletionRequest, ChatCompletionStreamEvent } from '../../openai/chat.ts';
import { bearerRequired, defineRoute } from '../contract.ts';
import { common, error, invalid, notFound } from './common.ts';

export const chatRoutes = {
  createChatCompletion: defineRoute({
    method: 'POST',
    url: '/v1/chat/completions',
    schema: {
      operationId: 'createChatCompletion',
      summary: 'Chat with a base, fine-tuned or checkpoint model',
      description:
        'Runs on a worker: llama.cpp on the model’s GGUF (made after training in the background, or on first use), or transformers when no GGUF can be made (vision). ' +
        'A first use that has to prepare the model is said, with a stream, in SSE comments (: preparing: …) before the first chunk. ' +
        'With stream true the answer is text/event-stream: chat.completion.chunk events, then data: [DONE]. response_format ' +
        'json_object/json_schema is enforced by a llama.cpp grammar. Longer than INFERENCE_TIMEOUT_MS is a 504.',
      tags: ['chat'],
      security: bearerRequired,
      body: ChatCompletionRequest,
      response: {
        200: {
          description: 'The completion; with stream true, a text/event-stream of ChatCompletionChunk events, then [DONE]',
          content: { 'application/json': { schema: ChatCompletion }, 'text/event-stream': { schema: ChatCompletionStreamEvent } },
        },
        400: invalid,
        404: notFound('model'),
        409: error('The fine-tuned model does not exist yet (its job has not succeeded)'),
        ...common,
        504: error('The request did not finish within INFERENCE_TIMEOUT_MS'),
      },
    },
  }),
};
