// /v1/files: an uploaded file is an upload here (the same path and limits as POST /datasets/upload), listed, read
// back as uploaded, and deleted with its stored bytes (not while a batch or a dataset being processed still reads it). Its lines are checked when a job (or a batch) uses it. A batch's
// output and error files are files too (purpose batch_output), read back the same way.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { BadRequest, invalidField, NotFound, PayloadTooLarge } from '@ftp/platform';
import { MULTIPART_LIMITS, openaiRoutes } from '@ftp/schema';
import { deleteDataset, storeUploadPart } from '@ftp/datasets';
import { listPage, presentFile } from '../presenters.ts';

export async function fileRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  const ownFile = async (userId: string, fileId: string) => {
    const row = await platform.datasets.getRaw(userId, fileId);
    if (!row) throw new NotFound('file', fileId);
    return row;
  };

  routes.route({
    ...openaiRoutes.createFile,
    handler: async (request) => {
      if (!request.isMultipart()) throw new BadRequest('send multipart/form-data with a "file" part and purpose "fine-tune" (or "batch")');
      // The SDKs send purpose before or after the file: the file is stored as it streams, and dropped again when the
      // purpose turns out wrong or a later part breaks a limit, so a refused request leaves no file behind.
      let purpose: unknown;
      let stored: Awaited<ReturnType<typeof storeUploadPart>> | undefined;
      const discard = async () => {
        if (!stored) return;
        await platform.datasets.deleteRaw(request.userId, stored.dataset_id);
        await platform.blobs.delete(stored.blob_key);
      };
      try {
        for await (const part of request.parts()) {
          if (part.type === 'file') {
            if (part.fieldname !== 'file' || stored) {
              part.file.resume();
              continue;
            }
            stored = await storeUploadPart(platform, request.userId, part, { lenient: true });
          } else if (part.valueTruncated) {
            throw new PayloadTooLarge(`the multipart field ${JSON.stringify(part.fieldname)} is longer than ${MULTIPART_LIMITS.fieldSize} bytes`);
          } else if (part.fieldname === 'purpose') purpose = part.value;
        }
      } catch (err) {
        await discard();
        throw err;
      }
      if (purpose !== 'fine-tune' && purpose !== 'batch') {
        await discard();
        throw invalidField(['body', 'purpose'], `purpose ${JSON.stringify(purpose ?? null)} is not served here; send purpose "fine-tune" (training data) or "batch" (a batch's input)`, 'invalid_value');
      }
      if (!stored) throw invalidField(['body', 'file'], 'send the file as a multipart part named "file"', 'missing');
      if (purpose === 'batch') stored = (await platform.datasets.setPurpose(request.userId, stored.dataset_id, 'batch')) ?? stored;
      return presentFile(stored);
    },
  });

  routes.route({
    ...openaiRoutes.listFiles,
    handler: async (request) => {
      const { after, limit, order, purpose } = request.query;
      let rows = await platform.datasets.listRaw(request.userId, purpose);
      if (order === 'asc') rows = rows.reverse();
      return listPage(rows.map(presentFile), after, limit);
    },
  });

  routes.route({
    ...openaiRoutes.retrieveFile,
    handler: async (request) => presentFile(await ownFile(request.userId, request.params.file_id)),
  });

  routes.route({
    ...openaiRoutes.downloadFile,
    handler: async (request, reply) => {
      const row = await ownFile(request.userId, request.params.file_id);
      return reply
        .type('application/octet-stream')
        .header('content-disposition', `attachment; filename="${row.filename.replace(/"/g, '')}"`)
        .send(await platform.blobs.get(row.blob_key));
    },
  });

  routes.route({
    ...openaiRoutes.deleteFile,
    handler: async (request) => {
      const row = await ownFile(request.userId, request.params.file_id);
      // The upload's deletion (what still needs the file is a 409, or cancelled with cancel_jobs=true).
      await deleteDataset(platform, request.userId, { kind: 'upload', row }, { cancelJobs: request.query.cancel_jobs === 'true' });
      return { id: row.dataset_id, object: 'file' as const, deleted: true as const };
    },
  });
}
