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
  return result.success ? { value: result.data } : { error: new RequestValidationError(result.error.issues, data) };
};

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
