// /v1/uploads: OpenAI's Uploads API, a file sent in parts (what the SDKs' upload_file_chunked does for a large file).
// The domain (parts stored as they stream, joined and checked on completion) is @ftp/datasets' upload-parts.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { BadRequest, invalidField, type UploadRow } from '@ftp/platform';
import { openaiRoutes } from '@ftp/schema';
import { addUploadPart, cancelUpload, completeUpload, createUpload, partLimit } from '@ftp/datasets';
import { presentUpload, seconds } from '../presenters.ts';

export async function uploadRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;

  const present = async (upload: UploadRow) =>
    presentUpload(upload, upload.dataset_id ? await platform.datasets.getRaw(upload.user_id, upload.dataset_id) : undefined);

  routes.route({
    ...openaiRoutes.createUpload,
    handler: async (request) => present(await createUpload(platform, request.userId, request.body)),
  });

  routes.route({
    ...openaiRoutes.addUploadPart,
    handler: async (request) => {
      if (!request.isMultipart()) throw new BadRequest('send multipart/form-data with the part\'s bytes in a part named "data"');
      let added: Awaited<ReturnType<typeof addUploadPart>> | undefined;
      for await (const part of request.parts({ limits: { fileSize: partLimit(platform) } })) {
        if (part.type !== 'file' || part.fieldname !== 'data' || added) {
          if (part.type === 'file') part.file.resume();
          continue;
        }
        added = await addUploadPart(platform, request.userId, request.params.upload_id, part);
      }
      if (!added) throw invalidField(['body', 'data'], 'send the part\'s bytes as a multipart part named "data"', 'missing');
      return { id: added.part_id, object: 'upload.part' as const, created_at: seconds(added.created_at), upload_id: request.params.upload_id };
    },
  });

  routes.route({
    ...openaiRoutes.completeUpload,
    handler: async (request) => {
      const { upload, file } = await completeUpload(platform, request.userId, request.params.upload_id, request.body);
      return presentUpload(upload, file);
    },
  });

  routes.route({
    ...openaiRoutes.cancelUpload,
    handler: async (request) => present(await cancelUpload(platform, request.userId, request.params.upload_id)),
  });
}
