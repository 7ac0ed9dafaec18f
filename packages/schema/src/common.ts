// Schemas every service shares: error bodies, health, timestamps, chat messages and the small enums
// the interface repeats. Component ids (`.meta({ id })`) name them in the generated OpenAPI documents.
import { z } from 'zod';

export const Modality = z
  .enum(['text', 'vision'])
  .describe('text, or vision when messages carry image parts')
  .meta({ id: 'Modality' });
export type Modality = z.infer<typeof Modality>;

export const DatasetSource = z
  .enum(['upload', 'hub'])
  .describe('upload: a file sent to POST /datasets/upload; hub: a model-hub dataset repo such as owner/name')
  .meta({ id: 'DatasetSource' });
export type DatasetSource = z.infer<typeof DatasetSource>;

/** ISO 8601 date-time; services send `Date.toISOString()`. */
export const Timestamp = z.iso.datetime({ offset: true });

/** Ids are opaque to clients; only emptiness is a client mistake worth a 422. */
export const Identifier = z.string().min(1).max(256);

/**
 * Credentials travel in request bodies only; response schemas never name these fields. An empty
 * string means "no credential", as form-driven clients send it. Each is sent on as an HTTP header (a bearer token), so
 * it must be visible ASCII: another character cannot be sent at all, and was once reported as the hub being down.
 */
export const Secret = z.string().regex(/^[\x21-\x7e]*$/, 'must be a token as it was issued: visible ASCII characters, no spaces or other characters');
/** How deep a JSON body may nest: far beyond any real request (a response_format JSON Schema is a few levels) and far
 *  below what recursion downstream takes (a 3,000-deep schema once overflowed the stack). Deeper: a 422 at that field. */
export const MAX_JSON_DEPTH = 64;
/** The largest integer a request may send for a count that is stored or computed with (a PostgreSQL integer): beyond
 *  it a request is a 422 at its field, never a database error. */
export const MAX_INT32 = 2 ** 31 - 1;
/** An integer a request sends, within [min, max] (max at most MAX_INT32). */
export const boundedInt = (min: number, max = MAX_INT32) => z.number().int().min(min).max(max);
/** A stored checkpoint of a job (GET /jobs/{id}/checkpoints), instead of its final model. */
export const CheckpointStep = boundedInt(1).describe('Use this checkpoint of the job (GET /jobs/{id}/checkpoints) instead of its final model');
/** A Tinker run's saved sampler weights by name (services/tinker; the model `tinker:<run id>:<name>` on /v1). */
export const CheckpointName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'a name of letters, digits, dot, underscore and dash, up to 128')
  .describe('A Tinker training run’s sampler weights, by the name given to save_weights_for_sampler; job_id is then the run’s id (GET /jobs lists runs)');
export const SECRET_FIELD_NAMES = ['hub_token', 'api_key', 'llm_api_key'] as const;

/** `schema` as a JSON Schema for a document's `contentSchema` (what a string holds, e.g. one server-sent event's JSON
 *  data): named schemas are the document's components, or written out in place with `inline` (for a schema no other
 *  part of the document names, which would have no component). */
export function contentSchemaOf(schema: z.ZodType, { inline = false } = {}): Record<string, unknown> {
  const { $schema: _dialect, $defs: _named, ...json } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any', ...(inline ? { metadata: z.registry() } : {}) });
  return JSON.parse(JSON.stringify(json).replace(/"#\/\$defs\/([^"]+)"/g, '"#/components/schemas/$1"')) as Record<string, unknown>;
}

const EventSeq = z.string().regex(/^\d+$/).describe('Sequence number; send it back as Last-Event-ID to resume after it');

/** One server-sent event of a resource's event log stream (a job's, an evaluation's): `event` the kind, `id` its
 *  sequence number (none on `end`), `data` one line of JSON whose shape its kind decides (`kinds`, as contentSchema). */
export function eventLogStreamItem(kinds: Readonly<Record<string, z.ZodType>>) {
  return z.union(
    Object.entries(kinds).map(([kind, data]) =>
      z
        .object({
          event: z.literal(kind),
          // `end` sends no id of its own; an SSE reader carries the last one over to it (the stream's last event id).
          id: kind === 'end' ? EventSeq.optional() : EventSeq,
          data: z.string().describe(`${data.description ?? kind}: one line of JSON (contentSchema)`).meta({ contentMediaType: 'application/json', contentSchema: contentSchemaOf(data) }),
        })
        .describe(data.description ?? kind),
    ) as unknown as [z.ZodObject, z.ZodObject, ...z.ZodObject[]],
  );
}

/** A value the service may not know yet: absent or null. */
export const maybe = <T extends z.ZodType>(schema: T) => schema.nullable().optional();

// ---------------------------------------------------------------------------------------------
// Error bodies (decisions.md, "Errors")

export const ValidationIssue = z
  .object({
    loc: z
      .array(z.string())
      .describe('Where the bad value is: body, path, query or header, then the field path (array indexes as strings)'),
    msg: z.string().describe('What is wrong, as a sentence'),
    type: z.string().describe('A short machine word: missing, invalid_type, too_small, too_big, invalid_value, unrecognized_keys, custom, …'),
  })
  .meta({ id: 'ValidationIssue' });
export type ValidationIssue = z.infer<typeof ValidationIssue>;

export const ValidationErrorBody = z
  .object({ detail: z.array(ValidationIssue).min(1) })
  .meta({ id: 'ValidationErrorBody', description: 'The request did not match the schema; one entry per problem' });
export type ValidationErrorBody = z.infer<typeof ValidationErrorBody>;

/**
 * JSON Schema of rules a refinement checks across fields, for `.meta()`: zod writes meta keys into the schema it
 * generates, so the OpenAPI document states what the server enforces and a client generating requests from it (or a
 * person reading it) sends what is accepted. The refinement stays the check; these only describe it. Each rule is
 * `when` (a schema the object matches) → `then` (a schema it must also match).
 */
export function documentedRules(...rules: Array<{ when: object; then: object }>): { allOf: object[] } {
  return { allOf: rules.map(({ when, then }) => ({ if: when, then })) };
}

export const ErrorBody = z
  .object({
    detail: z.string().describe('One sentence a person can act on'),
    request_id: z.string().optional().describe('Present on 500 responses; quote it when reporting the problem'),
  })
  .meta({ id: 'ErrorBody', description: 'Every error other than a validation failure' });
export type ErrorBody = z.infer<typeof ErrorBody>;

// ---------------------------------------------------------------------------------------------
// Health (decisions.md, "Health and versions")

const CheckResult = z
  .string()
  .describe("'ok' when reachable, 'unused' when this service does not need it, otherwise what is wrong");

export const HealthBody = z
  .object({
    status: z.enum(['ok', 'degraded']).describe('ok with HTTP 200; degraded with HTTP 503'),
    service: z.string().describe('Service name, e.g. preprocessing'),
    version: z.string().describe('Interface version of this service'),
    checks: z.object({ db: CheckResult, storage: CheckResult, queue: CheckResult }),
  })
  .meta({ id: 'HealthBody', description: 'Service health with one entry per dependency' });
export type HealthBody = z.infer<typeof HealthBody>;

// ---------------------------------------------------------------------------------------------
// ChatML messages: processed records, batch inference input and evaluation samples share them.

export const TextPart = z.strictObject({
  type: z.literal('text'),
  text: z.string(),
});
export const ImagePart = z.strictObject({
  type: z.literal('image'),
  image: z.string().min(1).describe('Image URL, data URI, base64 data or blob URI'),
});
export const ContentPart = z
  .discriminatedUnion('type', [TextPart, ImagePart])
  .meta({ id: 'ContentPart', description: 'One part of a multimodal message' });
export type ContentPart = z.infer<typeof ContentPart>;

export const ChatRole = z.enum(['system', 'user', 'assistant']);
export type ChatRole = z.infer<typeof ChatRole>;

export const ChatMessage = z
  .strictObject({
    role: ChatRole,
    content: z
      .union([z.string(), z.array(ContentPart).min(1)])
      .describe('Plain text, or text and image parts of one message'),
  })
  .meta({ id: 'ChatMessage', description: 'One ChatML message' });
export type ChatMessage = z.infer<typeof ChatMessage>;

export const Conversation = z.array(ChatMessage).min(1).describe('One conversation, oldest message first');

/** A call as OpenAI writes it (arguments: a JSON object in a string). */
export const ToolCallMessagePart = z.object({ id: z.string(), type: z.literal('function'), function: z.object({ name: z.string(), arguments: z.string() }) });

/** A message as the engines take it (the infer queue, the ML core's serve, the fast engine, a chat template): plain
 *  text, with an assistant turn's calls and the id of the call a tool message answers. The one message type inside the
 *  platform; the faces' own message shapes (ChatMessage above, /v1's) are turned into it. */
export const PlainMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  tool_calls: z.array(ToolCallMessagePart).optional(),
  tool_call_id: z.string().optional(),
});
export type PlainMessage = z.infer<typeof PlainMessage>;
export type Conversation = z.infer<typeof Conversation>;
