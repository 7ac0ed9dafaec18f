// OpenAI's Responses API (POST /v1/responses), stateless: the request and response objects and stream events as the
// official SDKs send and read them. It runs as a chat completion does (the same models, engines, tools and grammars);
// what needs state or a service not served here (stored responses, built-in tools, background mode, reasoning models,
// images) is accepted by shape and refused by the route with a 400 that names the field and says why.
import { z } from 'zod';
import { boundedInt, contentSchemaOf, MAX_JSON_DEPTH } from '../common.ts';
import { FunctionName } from './chat.ts';

const UnixSeconds = z.number().int().nonnegative().describe('Unix time, seconds');

/** Any `type` but `known`: what OpenAI has beyond what is served here, let through the schema so the refusal can
 *  name it. */
const otherType = (known: string[], what: string) =>
  z.object({ type: z.string().regex(new RegExp(`^(?!(${known.join('|')})$)`), `not ${known.join(', ')}`) }).describe(`${what}: refused with a 400 that says so`);

const InputText = z.object({ type: z.literal('input_text'), text: z.string() });
const OutputText = z.object({ type: z.literal('output_text'), text: z.string(), annotations: z.array(z.unknown()).optional() }).describe('An earlier answer’s text, sent back');
const OtherPart = otherType(['input_text', 'output_text'], 'input_image, input_file, input_audio, refusal: the models served read text only');

const MessageItem = z.object({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'system', 'developer', 'assistant']).describe('developer is read as system'),
  content: z.union([z.string(), z.array(z.union([InputText, OutputText, OtherPart])).min(1)]),
  id: z.string().optional().describe('Ignored (an output item sent back keeps its id)'),
  status: z.string().optional().describe('Ignored'),
});
const FunctionCallItem = z.object({
  type: z.literal('function_call'),
  call_id: z.string().min(1).max(256).describe('Answered by a function_call_output item with this call_id'),
  name: FunctionName,
  arguments: z.string().describe('The arguments: a JSON object in a string'),
  id: z.string().optional(),
  status: z.string().optional(),
});
const FunctionCallOutputItem = z.object({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1).max(256).describe('The call_id of an earlier function_call item'),
  output: z.union([z.string(), z.array(z.union([InputText, OtherPart])).min(1)]).describe('The result of the call'),
  id: z.string().optional(),
  status: z.string().optional(),
});
const OtherItem = otherType(['message', 'function_call', 'function_call_output'], 'reasoning, item_reference and built-in tool calls');

export const ResponseInputItem = z.union([MessageItem, FunctionCallItem, FunctionCallOutputItem, OtherItem]).meta({ id: 'ResponseInputItem' });
export type ResponseInputItem = z.infer<typeof ResponseInputItem>;

export const ResponseFunctionTool = z
  .object({
    type: z.literal('function'),
    name: FunctionName,
    description: z.string().nullable().optional(),
    parameters: z.record(z.string(), z.unknown()).nullable().optional().describe('A JSON Schema object for the arguments'),
    strict: z.boolean().nullable().optional(),
  })
  .meta({ id: 'ResponseFunctionTool' });
const BuiltInTool = otherType(['function'], 'web_search, file_search, code_interpreter, computer_use, image_generation, mcp, …');

export const ResponseToolChoice = z
  .union([
    z.enum(['none', 'auto', 'required']).describe('none: answer in text; auto: the model decides; required: it calls a tool (enforced)'),
    z.object({ type: z.literal('function'), name: FunctionName }).describe('Call this function (enforced)'),
  ])
  .meta({ id: 'ResponseToolChoice' });

export const ResponseTextFormat = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('text') }),
    z.object({ type: z.literal('json_object') }),
    z.object({
      type: z.literal('json_schema'),
      name: z.string().min(1).max(64),
      schema: z.record(z.string(), z.unknown()).describe(`A JSON Schema the answer follows (a llama.cpp grammar), at most ${MAX_JSON_DEPTH} levels deep`),
      strict: z.boolean().nullable().optional(),
      description: z.string().optional(),
    }),
  ])
  .meta({ id: 'ResponseTextFormat' });

export const CreateResponseRequest = z
  .object({
    model: z.string().min(1).max(512).describe('As in chat completions: a base model id, a fine_tuned_model, or a checkpoint’s fine_tuned_model_checkpoint'),
    input: z.union([z.string().describe('One user message'), z.array(ResponseInputItem).min(1)]).describe('The whole conversation: nothing is stored between requests'),
    instructions: z.string().nullable().optional().describe('A system message put first'),
    tools: z.array(z.union([ResponseFunctionTool, BuiltInTool])).max(128).optional().describe('Function tools, written into the prompt by the model’s chat template (as chat completions’ tools)'),
    tool_choice: ResponseToolChoice.optional().describe('Default auto with tools; needs tools'),
    parallel_tool_calls: z.boolean().nullable().optional().describe('false: at most one call per answer (default true)'),
    text: z.object({ format: ResponseTextFormat.optional(), verbosity: z.string().nullable().optional().describe('Ignored') }).nullable().optional(),
    max_output_tokens: boundedInt(1).nullable().optional(),
    temperature: z.number().min(0).max(2).nullable().optional().describe('Default 1, as OpenAI; 0 is greedy'),
    top_p: z.number().gt(0).max(1).nullable().optional(),
    stream: z.boolean().nullable().optional(),
    store: z.boolean().nullable().optional().describe('Only false: nothing is stored here (true is a 400; OpenAI’s default, true, is taken as false when left out)'),
    metadata: z.record(z.string().max(64), z.string().max(512)).nullable().optional().describe('Echoed in the response'),
    background: z.boolean().nullable().optional().describe('Only false: background mode needs stored responses (a 400)'),
    previous_response_id: z.string().nullable().optional().describe('Refused (a 400): no response is stored; send the whole conversation in input'),
    conversation: z.union([z.string(), z.object({ id: z.string() })]).nullable().optional().describe('Refused (a 400): no conversation is stored'),
    reasoning: z
      .object({ effort: z.string().nullable().optional(), summary: z.string().nullable().optional() })
      .nullable()
      .optional()
      .describe('Only absent, null or effort none: no reasoning model is served (a 400)'),
    user: z.string().optional(),
    use_fast_engine: z.boolean().nullable().optional().describe('Our extension, as in chat completions: true runs llama.cpp, false transformers (+PEFT)'),
  })
  .meta({ id: 'CreateResponseRequest', examples: [{ model: 'ft:google/gemma-3-270m-it:support:job_0123456789abcdef01234567', instructions: 'Answer briefly.', input: 'Hello!', max_output_tokens: 32 }] });
export type CreateResponseRequest = z.infer<typeof CreateResponseRequest>;

export const ResponseOutputMessage = z
  .object({
    type: z.literal('message'),
    id: z.string(),
    role: z.literal('assistant'),
    status: z.enum(['in_progress', 'completed', 'incomplete']),
    content: z.array(z.object({ type: z.literal('output_text'), text: z.string(), annotations: z.array(z.never()), logprobs: z.array(z.never()) })),
  })
  .meta({ id: 'ResponseOutputMessage' });
export const ResponseFunctionCall = z
  .object({
    type: z.literal('function_call'),
    id: z.string(),
    call_id: z.string().describe('Send the result back as a function_call_output item with this call_id'),
    name: z.string(),
    arguments: z.string().describe('A JSON object in a string'),
    status: z.enum(['in_progress', 'completed']),
  })
  .meta({ id: 'ResponseFunctionCall' });
export const ResponseOutputItem = z.discriminatedUnion('type', [ResponseOutputMessage, ResponseFunctionCall]);
export type ResponseOutputItem = z.infer<typeof ResponseOutputItem>;

export const ResponseUsage = z.object({
  input_tokens: z.number().int(),
  input_tokens_details: z.object({ cached_tokens: z.number().int() }),
  output_tokens: z.number().int(),
  output_tokens_details: z.object({ reasoning_tokens: z.number().int() }),
  total_tokens: z.number().int(),
});

export const ResponseObject = z
  .object({
    id: z.string(),
    object: z.literal('response'),
    created_at: UnixSeconds,
    status: z.enum(['in_progress', 'completed', 'incomplete', 'failed']).describe('incomplete: cut at max_output_tokens'),
    background: z.literal(false),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    incomplete_details: z.object({ reason: z.literal('max_output_tokens') }).nullable(),
    instructions: z.string().nullable(),
    max_output_tokens: z.number().int().nullable(),
    model: z.string(),
    output: z.array(ResponseOutputItem),
    parallel_tool_calls: z.boolean(),
    previous_response_id: z.null(),
    reasoning: z.object({ effort: z.null(), summary: z.null() }),
    store: z.literal(false),
    temperature: z.number(),
    text: z.object({ format: ResponseTextFormat }),
    tool_choice: ResponseToolChoice,
    tools: z.array(ResponseFunctionTool),
    top_p: z.number(),
    truncation: z.literal('disabled'),
    usage: ResponseUsage.nullable().describe('The engine’s own token counts; null until the response has ended'),
    metadata: z.record(z.string(), z.string()),
    user: z.string().nullable(),
  })
  .meta({ id: 'Response', description: 'The answer; output_text is not sent (the SDKs compute it from output)' });
export type ResponseObject = z.infer<typeof ResponseObject>;

const ofItem = { item_id: z.string(), output_index: z.number().int() };
const ofPart = { ...ofItem, content_index: z.number().int() };
const OutputTextPart = z.object({ type: z.literal('output_text'), text: z.string(), annotations: z.array(z.never()), logprobs: z.array(z.never()) });

export const ResponseStreamEventData = z
  .discriminatedUnion('type', [
    z.object({ type: z.enum(['response.created', 'response.in_progress', 'response.completed', 'response.incomplete', 'response.failed']), response: ResponseObject }),
    z.object({ type: z.enum(['response.output_item.added', 'response.output_item.done']), output_index: z.number().int(), item: ResponseOutputItem }),
    z.object({ type: z.enum(['response.content_part.added', 'response.content_part.done']), ...ofPart, part: OutputTextPart }),
    z.object({ type: z.literal('response.output_text.delta'), ...ofPart, delta: z.string(), logprobs: z.array(z.never()) }),
    z.object({ type: z.literal('response.output_text.done'), ...ofPart, text: z.string(), logprobs: z.array(z.never()) }),
    z.object({ type: z.literal('response.function_call_arguments.delta'), ...ofItem, delta: z.string() }),
    z.object({ type: z.literal('response.function_call_arguments.done'), ...ofItem, name: z.string(), arguments: z.string() }),
    z.object({ type: z.literal('error'), code: z.string().nullable(), message: z.string(), param: z.string().nullable() }),
  ])
  .and(z.object({ sequence_number: z.number().int().min(0).describe('0, 1, 2, … in the order sent') }));
export type ResponseStreamEventData = z.infer<typeof ResponseStreamEventData>;

/** One server-sent event of a streamed response: `event` is its type, `data` the event as one line of JSON
 *  (comments, `: preparing …`, say what a first use waits for). */
export const ResponseStreamEvent = z
  .object({
    event: z.string().describe('The event’s type'),
    data: z.string().describe('The event as one line of JSON').meta({ contentMediaType: 'application/json', contentSchema: contentSchemaOf(ResponseStreamEventData, { inline: true }) }),
  })
  .meta({ id: 'ResponseStreamEvent' });
