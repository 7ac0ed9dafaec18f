// /v1/batches: OpenAI's Batch API. Creating one checks what can be checked at once (the endpoint, the input file is
// the caller's and is a batch file) and queues it; a worker reads its lines, answers them and writes the output and
// error files (@ftp/jobs/openai batches.ts, the worker's run-batch.ts). Cancel flags it; its worker stops between lines.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { invalidField, newId, NotFound } from '@ftp/platform';
import { BATCH_ENDPOINTS, cancelBatch } from '@ftp/jobs/openai';
import { batchQueue } from '@ftp/jobs/queues';
import { openaiRoutes } from '@ftp/schema';
import { listPage, presentBatch } from '../presenters.ts';

/** A batch's window: OpenAI's 24 h. */
const WINDOW_MS = 24 * 3600 * 1000;
const MAX_METADATA_PAIRS = 16;

export async function batchRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  const ownBatch = async (userId: string, batchId: string) => {
    const row = await platform.batches.get(userId, batchId);
    if (!row) throw new NotFound('batch', batchId);
    return row;
  };

  routes.route({
    ...openaiRoutes.createBatch,
    handler: async (request) => {
      const { input_file_id, endpoint, completion_window, metadata, output_expires_after } = request.body;
      if (!(BATCH_ENDPOINTS as readonly string[]).includes(endpoint)) {
        throw invalidField(['body', 'endpoint'], `${endpoint} is not served here; a batch calls ${BATCH_ENDPOINTS.join(' or ')}`, 'invalid_value');
      }
      if (output_expires_after !== undefined) throw invalidField(['body', 'output_expires_after'], 'output files are kept until deleted here; leave output_expires_after out', 'invalid_value');
      if (metadata && Object.keys(metadata).length > MAX_METADATA_PAIRS) throw invalidField(['body', 'metadata'], `metadata holds at most ${MAX_METADATA_PAIRS} pairs`, 'invalid_value');
      const file = await platform.datasets.getRaw(request.userId, input_file_id);
      if (!file) throw new NotFound('file', input_file_id);
      if (file.purpose !== 'batch') {
        throw invalidField(['body', 'input_file_id'], `${input_file_id} was uploaded with purpose ${file.purpose}; upload the batch's input with purpose "batch"`, 'invalid_value');
      }
      const row = await platform.batches.insert({
        batch_id: newId('batch'), user_id: request.userId, endpoint, input_file_id, completion_window,
        metadata: metadata ?? null, expires_at: new Date(Date.now() + WINDOW_MS),
      });
      await platform.queue.add(batchQueue, { batchId: row.batch_id });
      return presentBatch(row);
    },
  });

  routes.route({
    ...openaiRoutes.listBatches,
    handler: async (request) => listPage((await platform.batches.list(request.userId)).map(presentBatch), request.query.after, request.query.limit),
  });

  routes.route({
    ...openaiRoutes.retrieveBatch,
    handler: async (request) => presentBatch(await ownBatch(request.userId, request.params.batch_id)),
  });

  routes.route({
    ...openaiRoutes.cancelBatch,
    handler: async (request) => {
      await cancelBatch(platform, request.userId, request.params.batch_id);
      return presentBatch(await ownBatch(request.userId, request.params.batch_id));
    },
  });
}
