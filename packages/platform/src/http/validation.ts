// Request validation with zod that keeps the original zod issues, so the error handler can build the
// 422 `loc` exactly (fastify-type-provider-zod's own compiler flattens issues into JSON-pointer strings).
import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';
import { MAX_JSON_DEPTH } from '@ftp/schema';

/** Thrown (returned) by the validator; fastify adds `validationContext` (body, params, querystring, headers). */
export class RequestValidationError extends Error {
  validationContext?: string;
  /** The raw input: lets the 422 tell an absent enum or discriminator ('missing') from a wrong one. */
  constructor(readonly issues: z.core.$ZodIssue[], readonly input: unknown) {
    super(issues.map((i) => i.message).join('; '));
    this.name = 'RequestValidationError';
  }
}

export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => (data) => {
  // An absent body (Fastify hands validators null for it; an empty JSON body is read as none, service-app.ts)
  if (httpPart === 'body' && (data === undefined || data === null)) return absentBody(schema);
  const deep = tooDeep(data);
  if (deep) return { error: new RequestValidationError([deep], data) };
  const result = schema.safeParse(data);
  if (!result.success) return { error: new RequestValidationError(result.error.issues, data) };
  // Checked once parsed: an object that ignores unknown keys has dropped them (and what they held) by then.
  const nul = nulCharacters(result.data);
  return nul.length > 0 ? { error: new RequestValidationError(nul, data) } : { value: result.data };
};

/** A route whose body may be left out (an optional schema; its OpenAPI requestBody says so) gets none. One that needs a
 *  body is a 422 naming each field it lacks, or, when every field is optional, saying to send an object. */
function absentBody(schema: z.ZodType): { value?: unknown; error?: RequestValidationError } {
  if (schema.safeParse(undefined).success) return { value: undefined };
  const empty = schema.safeParse({});
  if (!empty.success) return { error: new RequestValidationError(empty.error.issues, {}) };
  const issue: z.core.$ZodIssue = { code: 'custom', path: [], message: 'the request has no body; send a JSON object ({} when no field is needed)', input: undefined, params: { type: 'missing' } };
  return { error: new RequestValidationError([issue], undefined) };
}

/** The 422 of a body that is JSON null where an object is expected. */
export function nullBody(): RequestValidationError {
  const issue: z.core.$ZodIssue = { code: 'invalid_type', expected: 'object', path: [], message: 'the body is null; send a JSON object', input: null };
  return Object.assign(new RequestValidationError([issue], null), { validationContext: 'body' });
}

/** The values of a JSON document with their paths and depths, walked with a stack of its own (a document may nest
 *  deeper than the call stack goes). `into` says whether to look inside a value. */
function* walk(data: unknown, into: (depth: number) => boolean = () => true): Generator<{ value: unknown; path: PropertyKey[]; depth: number }> {
  const stack: Array<{ value: unknown; path: PropertyKey[]; depth: number }> = [{ value: data, path: [], depth: 0 }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    yield item;
    if (item.value === null || typeof item.value !== 'object' || !into(item.depth)) continue;
    const entries = Array.isArray(item.value) ? item.value.map((v, i) => [i, v] as const) : Object.entries(item.value);
    for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], path: [...item.path, entries[i]![0]], depth: item.depth + 1 });
  }
}

/** The first value nested deeper than MAX_JSON_DEPTH, as an issue at its path. */
function tooDeep(data: unknown): z.core.$ZodIssue | undefined {
  for (const { path, depth } of walk(data, (depth) => depth <= MAX_JSON_DEPTH)) {
    if (depth > MAX_JSON_DEPTH) {
      return { code: 'custom', path, message: `nests deeper than ${MAX_JSON_DEPTH} levels; flatten it`, input: undefined, params: { type: 'too_deep' } };
    }
  }
  return undefined;
}

/** PostgreSQL cannot store U+0000 in text or jsonb, and every request string may end up there: one rule for all of
 *  them, refused with the field's loc (the OpenAPI documents state it on every string). */
function nulCharacters(data: unknown): z.core.$ZodIssue[] {
  const issues: z.core.$ZodIssue[] = [];
  const issue = (path: PropertyKey[], input: string) =>
    issues.push({ code: 'custom', path, message: 'must not contain the NUL character (U+0000); remove it', input, params: { type: 'string_pattern_mismatch' } });
  for (const { value, path } of walk(data)) {
    if (typeof value === 'string' && value.includes('\u0000')) issue(path, value);
    else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const key of Object.keys(value)) if (key.includes('\u0000')) issue([...path, key], key);
    }
  }
  return issues;
}

/** Fastify's names for the parts of a request → the `loc` prefixes of decisions.md. */
export function locationOf(validationContext: string | undefined): 'body' | 'path' | 'query' | 'header' {
  switch (validationContext) {
    case 'params':
      return 'path';
    case 'querystring':
      return 'query';
    case 'headers':
      return 'header';
    default:
      return 'body';
  }
}
