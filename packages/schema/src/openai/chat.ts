// /v1/chat/completions: the request (messages, tools, response formats), the completion and its streamed chunks.
import { z } from 'zod';
import { boundedInt, contentSchemaOf, MAX_JSON_DEPTH } from '../common.ts';
import { nullable, UnixSeconds } from './common.ts';

/** A chat completion's max_tokens when the request names none (sent to the engines with every request, so neither
 *  engine's own default decides); the native POST /inference's is max_new_tokens' default (inference.ts). */
export const CHAT_DEFAULT_MAX_TOKENS = 512;

const TextPart = z.object({ type: z.literal('text'), text: z.string() });
const MessageContent = z.union([z.string(), z.array(TextPart).min(1)]).describe('Text, or text parts (images are not accepted here)');
export const FunctionName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/).describe('1 to 64 letters, digits, _ or -');

export const ChatToolCall = z
  .object({
    id: z.string().min(1).describe('Answered by a tool message’s tool_call_id'),
    type: z.literal('function'),
    function: z.object({ name: z.string(), arguments: z.string().describe('The arguments: a JSON object in a string') }),
  })
  .meta({ id: 'ChatToolCall' });

export const ChatMessageInput = z.union([
  z.object({
    role: z.enum(['system', 'developer', 'user']).describe('developer is read as system'),
    content: MessageContent,
    name: z.string().optional(),
  }),
  z.object({
    role: z.literal('assistant'),
    content: nullable(MessageContent).optional().describe('May be null or left out when the turn has tool_calls'),
    name: z.string().optional(),
    tool_calls: z.array(ChatToolCall).min(1).optional().describe('The calls the assistant made in this turn'),
  }),
  z.object({
    role: z.literal('tool'),
    content: MessageContent.describe('The result of the call'),
    tool_call_id: z.string().min(1).describe('The id of the call (an earlier assistant turn’s tool_calls) it answers'),
  }),
]);

export const ChatTool = z
  .object({
    type: z.literal('function'),
    function: z.object({
      name: FunctionName,
      description: z.string().optional(),
      parameters: z.record(z.string(), z.unknown()).optional().describe('A JSON Schema object for the arguments'),
      strict: nullable(z.boolean()).optional(),
    }),
  })
  .meta({ id: 'ChatTool' });

export const ChatToolChoice = z
  .union([
    z.enum(['none', 'auto', 'required']).describe('none: answer in text; auto: the model decides; required: it calls a tool (enforced)'),
    z.object({ type: z.literal('function'), function: z.object({ name: FunctionName }) }).describe('Call this function (enforced)'),
  ])
  .meta({ id: 'ChatToolChoice' });

const Stop = z.union([z.string().min(1), z.array(z.string().min(1)).max(4)]);

export const ChatResponseFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({ name: z.string().min(1).max(64), schema: z.record(z.string(), z.unknown()).optional().describe(`A JSON Schema the answer follows, at most ${MAX_JSON_DEPTH} levels deep (as every JSON body)`), strict: nullable(z.boolean()).optional(), description: z.string().optional() }),
  }),
]);

export const ChatCompletionRequest = z
  .object({
    model: z.string().min(1).max(512).describe('A base model id, a fine_tuned_model, or a checkpoint’s fine_tuned_model_checkpoint'),
    messages: z.array(ChatMessageInput).min(1),
    max_tokens: nullable(boundedInt(1)).optional().describe(`Tokens generated at most (default ${CHAT_DEFAULT_MAX_TOKENS}; the answer also ends where the model's context does)`),
    max_completion_tokens: nullable(boundedInt(1)).optional().describe('max_tokens under its newer name; wins over max_tokens'),
    temperature: nullable(z.number().min(0).max(2)).optional().describe('Default 1, as OpenAI; 0 is greedy, and so is anything below 1e-4'),
    top_p: nullable(z.number().gt(0).max(1)).optional(),
    n: nullable(z.number().int().min(1).max(8)).optional(),
    stop: nullable(Stop).optional(),
    seed: nullable(z.number().int()).optional().describe('Sampling seed (any integer; the i-th of n answers uses seed + i)'),
    stream: nullable(z.boolean()).optional(),
    stream_options: nullable(z.object({ include_usage: z.boolean().optional() })).optional(),
    response_format: ChatResponseFormat.optional(),
    tools: z.array(ChatTool).min(1).max(128).optional().describe('Functions the model may call, written into the prompt by its own chat template (a template without tool support is a 400)'),
    tool_choice: ChatToolChoice.optional().describe('Default auto with tools; needs tools'),
    parallel_tool_calls: nullable(z.boolean()).optional().describe('false: at most one call per answer (default true)'),
    user: z.string().optional(),
    use_fast_engine: nullable(z.boolean())
      .optional()
      .describe('Our extension, as in POST /inference: true runs the model on llama.cpp (the default for text models), false on transformers (+PEFT), the only engine for vision models'),
  })
  .meta({ id: 'ChatCompletionRequest', examples: [{ model: 'ft:google/gemma-3-270m-it:support:job_0123456789abcdef01234567', messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 32 }] });
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

export const CompletionUsage = z.object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() });

export const ChatCompletion = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: UnixSeconds,
    model: z.string(),
    system_fingerprint: nullable(z.string()),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({
          role: z.literal('assistant'),
          content: nullable(z.string()).describe('null when the answer is only tool calls'),
          refusal: z.null(),
          tool_calls: z.array(ChatToolCall).min(1).optional().describe('The calls the model made, read from its family’s format'),
        }),
        finish_reason: z.enum(['stop', 'length', 'tool_calls']),
        logprobs: z.null(),
      }),
    ),
    usage: CompletionUsage,
  })
  .meta({ id: 'ChatCompletion' });
export type ChatCompletion = z.infer<typeof ChatCompletion>;

export const ChatCompletionChunk = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: UnixSeconds,
    model: z.string(),
    system_fingerprint: nullable(z.string()),
    choices: z.array(
      z.object({
        index: z.number().int(),
        delta: z.object({
          role: z.literal('assistant').optional(),
          content: z.string().optional(),
          tool_calls: z
            .array(
              z.object({
                index: z.number().int().min(0).describe('Which call of the answer this piece belongs to'),
                id: z.string().optional().describe('In the first piece of a call'),
                type: z.literal('function').optional(),
                function: z.object({ name: z.string().optional().describe('In the first piece of a call'), arguments: z.string().optional().describe('The next piece of the arguments’ JSON') }),
              }),
            )
            .optional(),
        }),
        finish_reason: nullable(z.enum(['stop', 'length', 'tool_calls'])),
        logprobs: z.null(),
      }),
    ),
    usage: nullable(CompletionUsage).optional(),
  })
  .meta({ id: 'ChatCompletionChunk' });
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunk>;

/** One server-sent event of a streamed chat completion, as its SSE fields carry it: `data` is a ChatCompletionChunk as
 *  one line of JSON, and `[DONE]` after the last (comments, `: preparing …`, say what a first use waits for). */
export const ChatCompletionStreamEvent = z
  .object({
    data: z.union([
      z.literal('[DONE]'),
      z.string().describe('A ChatCompletionChunk as one line of JSON').meta({ contentMediaType: 'application/json', contentSchema: contentSchemaOf(ChatCompletionChunk, { inline: true }) }),
    ]),
  })
  .meta({ id: 'ChatCompletionStreamEvent' });
