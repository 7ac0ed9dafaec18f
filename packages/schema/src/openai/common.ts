// What every /v1 resource shares: Unix-seconds times, nullable fields, OpenAI's error body and the query of a
// cursor-paginated list.
import { z } from 'zod';

export const UnixSeconds = z.number().int().nonnegative().describe('Unix time, seconds');
export const nullable = <T extends z.ZodType>(schema: T) => schema.nullable();

export const OpenAiError = z
  .object({
    error: z.object({
      message: z.string().describe('One sentence a person can act on'),
      type: z.string().describe('invalid_request_error, authentication_error, not_found_error, conflict_error, server_error, …'),
      param: nullable(z.string()).describe('The request field at fault, dotted (e.g. hyperparameters.n_epochs)'),
      code: nullable(z.string()),
    }),
  })
  .meta({ id: 'OpenAiError', description: 'The error body of every /v1 route, as OpenAI sends it' });

export const ListQuery = z.object({
  after: z.string().min(1).max(256).optional().describe('The last id of the previous page'),
  limit: z.coerce.number().int().min(1).max(1000).default(20),
});
