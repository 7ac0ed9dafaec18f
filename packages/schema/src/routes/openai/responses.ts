// Route contracts of /v1/responses (OpenAI's Responses API, stateless).
import { CreateResponseRequest, ResponseObject, ResponseStreamEvent } from '../../openai/responses.ts';
import { bearerRequired, defineRoute } from '../contract.ts';
import { common, error, invalid, notFound } from './common.ts';

export const responseRoutes = {
  createResponse: defineRoute({
    method: 'POST',
    url: '/v1/responses',
    schema: {
      operationId: 'createResponse',
      summary: 'A response from a base, fine-tuned or checkpoint model (OpenAI’s Responses API, stateless)',
      description:
        'Runs as a chat completion does (the same models, engines, function tools and json_schema grammar): instructions are a system ' +
        'message first, input the conversation (messages, function_call and function_call_output items). Nothing is stored: store true, ' +
        'previous_response_id, conversation and background are a 400 (send the whole conversation in input), and so are built-in tools, ' +
        'reasoning settings (no reasoning model is served) and image, file or audio input. With stream true the answer is ' +
        'text/event-stream: OpenAI’s response.* events with sequence_number, ending with response.completed (or response.incomplete ' +
        'when cut at max_output_tokens); a first use that has to prepare the model is said in SSE comments (: preparing: …) first.',
      tags: ['responses'],
      security: bearerRequired,
      body: CreateResponseRequest,
      response: {
        200: {
          description: 'The response; with stream true, a text/event-stream of response events',
          content: { 'application/json': { schema: ResponseObject }, 'text/event-stream': { schema: ResponseStreamEvent } },
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
