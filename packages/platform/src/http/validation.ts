// Request validation with zod that keeps the original zod issues, so the error handler can build the
// 422 `loc` exactly (fastify-type-provider-zod's own compiler flattens issues into JSON-pointer strings).
import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';

/** Thrown (returned) by the validator; fastify adds `validationContext` (body, params, querystring, headers). */
export class RequestValidationError extends Error {
  validationContext?: string;
  /** The raw input: lets the 422 tell an absent enum or discriminator ('missing') from a wrong one. */
  constructor(readonly issues: z.core.$ZodIssue[], readonly input: unknown) {
    super(issues.map((i) => i.message).join('; '));
    this.name = 'RequestValidationError';
  }
}

export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema }) => (data) => {
  const result = schema.safeParse(data);
  if (!result.success) return { error: new RequestValidationError(result.error.issues, data) };
  // Checked once parsed: an object that ignores unknown keys has dropped them (and what they held) by then.
  const nul = nulCharacters(result.data);
  return nul.length > 0 ? { error: new RequestValidationError(nul, data) } : { value: result.data };
};

/** PostgreSQL cannot store U+0000 in text or jsonb, and every request string may end up there: one rule for all of
 *  them, refused with the field's loc (the OpenAPI documents state it on every string). */
function nulCharacters(data: unknown, path: PropertyKey[] = []): z.core.$ZodIssue[] {
  if (typeof data === 'string') {
    return data.includes('\u0000') ? [{ code: 'custom', path, message: 'must not contain the NUL character (U+0000); remove it', input: data, params: { type: 'string_pattern_mismatch' } }] : [];
  }
  if (Array.isArray(data)) return data.flatMap((item, index) => nulCharacters(item, [...path, index]));
  if (data !== null && typeof data === 'object') {
    return Object.entries(data).flatMap(([key, value]) =>
      key.includes('\u0000') ? nulCharacters(key, [...path, key]) : nulCharacters(value, [...path, key]),
    );
  }
  return [];
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
