// A file sent in parts (OpenAI's Uploads API, /v1/uploads): each part streams into blob storage under the upload's
// prefix and is recorded once stored, so nothing accepted is lost when a process dies between parts; completing joins
// the named parts, in the client's order, into one upload (a /v1 file) through the same path as a whole file,
// checking the declared byte count and the md5 when given. The parts are removed once the upload has ended.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  Conflict, invalidField, newId, NotFound, PayloadTooLarge, removeUploadParts, userKeySegment,
  type Platform, type RawDatasetRow, type UploadRow,
} from '@ftp/platform';
import { UPLOAD_EXPIRES_S, UPLOAD_PART_MAX_BYTES } from '@ftp/schema';
import { discardUpload, receiveUpload, recordUpload, type UploadPart } from './uploads.ts';

export interface NewUpload {
  bytes: number;
  filename: string;
  mime_type: string;
  purpose: string;
  expires_after?: unknown;
}

/** The most bytes one part may carry here: OpenAI's 64 MiB, or less where the deployment's upload limit is lower. */
export const partLimit = (platform: Platform): number => Math.min(UPLOAD_PART_MAX_BYTES, platform.config.MAX_UPLOAD_BYTES);

export async function createUpload(platform: Platform, userId: string, request: NewUpload): Promise<UploadRow> {
  if (request.expires_after !== undefined) {
    throw invalidField(['body', 'expires_after'], 'expires_after is not supported: files here are kept until deleted (DELETE /v1/files/{id}); leave it out');
  }
  const limit = platform.config.MAX_UPLOAD_BYTES;
  if (request.bytes > limit) {
    throw invalidField(['body', 'bytes'], `bytes ${request.bytes} is more than this deployment takes (MAX_UPLOAD_BYTES, ${limit}); split the data into smaller files or raise the limit`);
  }
  const uploadId = newId('upload');
  return platform.uploads.insert({
    upload_id: uploadId,
    user_id: userId,
    filename: request.filename,
    purpose: request.purpose,
    mime_type: request.mime_type,
    bytes: request.bytes,
    blob_prefix: `uploads/${userKeySegment(userId)}/${uploadId}/`,
    expires_at: new Date(Date.now() + UPLOAD_EXPIRES_S * 1000),
  });
}

/** The caller's upload, or a 404. */
export async function ownUpload(platform: Platform, userId: string, uploadId: string): Promise<UploadRow> {
  const upload = await platform.uploads.get(userId, uploadId);
  if (!upload) throw new NotFound('upload', uploadId);
  return upload;
}

const notPending = (upload: Pick<UploadRow, 'upload_id' | 'status'>) =>
  new Conflict(`the upload ${upload.upload_id} is ${upload.status}: it takes no more parts and cannot be completed or cancelled` +
    (upload.status === 'expired' ? ` (an upload takes parts for ${UPLOAD_EXPIRES_S / 3600} hour); start a new upload` : ''));

/** Streams one part into the upload's prefix and records it; a part over the limit is a 413 and nothing is kept. */
export async function addUploadPart(platform: Platform, userId: string, uploadId: string, part: UploadPart): Promise<{ part_id: string; created_at: Date }> {
  const upload = await ownUpload(platform, userId, uploadId);
  if (upload.status !== 'pending') {
    part.file.resume();
    throw notPending(upload);
  }
  const tooLarge = () => new PayloadTooLarge(`a part may carry at most ${partLimit(platform)} bytes; send the file in smaller parts`);
  part.file.once('limit', () => part.file.destroy(tooLarge()));
  const partId = newId('part');
  const key = `${upload.blob_prefix}${partId}`;
  const { size } = await platform.blobs.put(key, part.file);
  if (part.file.truncated) {
    await platform.blobs.delete(key);
    throw tooLarge();
  }
  // The parts may not pile up past the declared size (room is left for one part sent again after a lost answer).
  const stored = (await platform.uploads.parts(uploadId)).reduce((sum, p) => sum + p.size_bytes, 0);
  if (stored + size > upload.bytes + partLimit(platform)) {
    await platform.blobs.delete(key);
    throw new PayloadTooLarge(`the parts sent to upload ${uploadId} would add up to ${stored + size} bytes, more than the ${upload.bytes} it was created for; start a new upload with the right bytes`);
  }
  const row = await platform.uploads.addPart(partId, uploadId, key, size);
  if (!row) {
    // Completed, cancelled or out of time while this part streamed.
    await platform.blobs.delete(key);
    throw notPending(await ownUpload(platform, userId, uploadId));
  }
  return row;
}

/** Joins the named parts into the upload's file: the parts must be this upload's, each named once, and add up to the
 *  declared bytes; the md5, when given, must be the joined file's. Returns the upload, completed, and its file. */
export async function completeUpload(
  platform: Platform,
  userId: string,
  uploadId: string,
  request: { part_ids: string[]; md5?: string },
): Promise<{ upload: UploadRow; file: RawDatasetRow }> {
  const upload = await ownUpload(platform, userId, uploadId);
  if (upload.status !== 'pending') throw notPending(upload);
  const stored = new Map((await platform.uploads.parts(uploadId)).map((p) => [p.part_id, p]));
  const named = new Set<string>();
  const parts = request.part_ids.map((partId, i) => {
    const part = stored.get(partId);
    if (!part) throw invalidField(['body', 'part_ids', String(i)], `${partId} is not a part of the upload ${uploadId}; name the ids POST /v1/uploads/${uploadId}/parts returned`);
    if (named.has(partId)) throw invalidField(['body', 'part_ids', String(i)], `${partId} is named twice; name each part once`);
    named.add(partId);
    return part;
  });
  const total = parts.reduce((sum, p) => sum + p.size_bytes, 0);
  if (total !== upload.bytes) {
    throw invalidField(['body', 'part_ids'], `the parts named add up to ${total} bytes, but the upload was created for ${upload.bytes}; send the missing parts, or start a new upload with the right bytes`);
  }
  const md5 = createHash('md5');
  const joined = Readable.from((async function* () {
    for (const part of parts) {
      for await (const chunk of await platform.blobs.get(part.blob_key)) {
        md5.update(chunk as Buffer);
        yield chunk as Buffer;
      }
    }
  })());
  const received = await receiveUpload(platform, userId, upload.filename, joined);
  const digest = md5.digest('hex');
  if (request.md5 !== undefined && request.md5.toLowerCase() !== digest) {
    await discardUpload(platform, received);
    throw invalidField(['body', 'md5'], `md5 ${request.md5} is not the joined file's (${digest}); check the parts and their order`);
  }
  const file = await recordUpload(platform, userId, received, { lenient: true, purpose: upload.purpose === 'batch' ? 'batch' : 'fine-tune' });
  const completed = await platform.uploads.finish(uploadId, 'completed', file.dataset_id);
  if (!completed) {
    await platform.datasets.deleteRaw(userId, file.dataset_id);
    await discardUpload(platform, received);
    throw notPending(await ownUpload(platform, userId, uploadId));
  }
  await removeUploadParts(platform, completed);
  return { upload: completed, file };
}

export async function cancelUpload(platform: Platform, userId: string, uploadId: string): Promise<UploadRow> {
  const upload = await ownUpload(platform, userId, uploadId);
  const cancelled = upload.status === 'pending' ? await platform.uploads.finish(uploadId, 'cancelled') : undefined;
  if (!cancelled) throw notPending(await ownUpload(platform, userId, uploadId));
  await removeUploadParts(platform, cancelled);
  return cancelled;
}
