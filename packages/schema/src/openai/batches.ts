// /v1/batches: a file of requests answered by the workers (OpenAI's Batch API).
import { z } from 'zod';
import { nullable, UnixSeconds } from './common.ts';

/** OpenAI's limit of lines in one batch input file. */
export const BATCH_MAX_LINES = 50_000;
/** The one completion window OpenAI offers. */
export const BATCH_COMPLETION_WINDOW = '24h';

export const CreateBatchRequest = z
  .object({
    input_file_id: z.string().min(1).max(256).describe('A file uploaded with purpose batch: one request per line, {custom_id, method: POST, url, body}'),
    endpoint: z.enum(['/v1/chat/completions', '/v1/responses', '/v1/embeddings', '/v1/completions'])
      .describe('/v1/chat/completions or /v1/responses; embeddings and completions are refused (a 400: not served here)'),
    completion_window: z.literal(BATCH_COMPLETION_WINDOW).describe('Lines not answered within 24 h are error lines (batch_expired)'),
    metadata: z.record(z.string().max(64), z.string().max(512)).nullable().optional().describe('Up to 16 pairs, kept and shown'),
    output_expires_after: z.unknown().optional().describe('Refused (a 400): output files are kept until deleted; leave it out'),
  })
  .meta({ id: 'CreateBatchRequest', examples: [{ input_file_id: 'ds_abc123', endpoint: '/v1/chat/completions', completion_window: '24h' }] });

const BatchError = z.object({ code: z.string(), message: z.string(), param: nullable(z.string()), line: nullable(z.number().int()) });
const nullableSeconds = nullable(UnixSeconds);

export const BatchObject = z
  .object({
    id: z.string(),
    object: z.literal('batch'),
    endpoint: z.string(),
    errors: nullable(z.object({ object: z.literal('list'), data: z.array(BatchError) })).describe('Why the input file could not be run at all'),
    input_file_id: z.string(),
    completion_window: z.string(),
    status: z.enum(['validating', 'failed', 'in_progress', 'finalizing', 'completed', 'expired', 'cancelling', 'cancelled']),
    output_file_id: nullable(z.string()).describe('The answered lines (purpose batch_output), once finalized'),
    error_file_id: nullable(z.string()).describe('The lines that failed, once finalized (absent when none did)'),
    created_at: UnixSeconds,
    in_progress_at: nullableSeconds,
    expires_at: nullableSeconds,
    finalizing_at: nullableSeconds,
    completed_at: nullableSeconds,
    failed_at: nullableSeconds,
    expired_at: nullableSeconds,
    cancelling_at: nullableSeconds,
    cancelled_at: nullableSeconds,
    request_counts: z.object({ total: z.number().int(), completed: z.number().int(), failed: z.number().int() }),
    metadata: nullable(z.record(z.string(), z.string())),
  })
  .meta({ id: 'BatchObject', description: 'A file of requests answered by the workers (OpenAI’s Batch)' });
export type BatchObject = z.infer<typeof BatchObject>;

export const BatchList = z
  .object({ object: z.literal('list'), data: z.array(BatchObject), has_more: z.boolean(), first_id: nullable(z.string()), last_id: nullable(z.string()) })
  .meta({ id: 'BatchList' });

/** One line of a batch's input file. */
export const BatchInputLine = z.object({
  custom_id: z.string().min(1).max(512),
  method: z.literal('POST'),
  url: z.string(),
  body: z.record(z.string(), z.unknown()),
});
