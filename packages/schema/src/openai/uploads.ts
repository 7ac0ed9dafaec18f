// /v1/uploads: a file sent in parts (OpenAI's Uploads API).
import { z } from 'zod';
import { nullable, UnixSeconds } from './common.ts';
import { FileObject } from './files.ts';

/** What an upload may be for. */
export const UploadPurpose = z.enum(['fine-tune', 'batch']);

/** OpenAI's part size limit (the SDKs' upload_file_chunked sends parts of this size). */
export const UPLOAD_PART_MAX_BYTES = 64 * 1024 * 1024;
/** How long an upload takes parts before it expires (OpenAI: an hour). */
export const UPLOAD_EXPIRES_S = 3600;

export const CreateUploadRequest = z
  .object({
    bytes: z.number().int().min(1).describe('The size of the whole file; the parts must add up to it (at most MAX_UPLOAD_BYTES)'),
    filename: z.string().min(1).max(256).regex(/^[^\u0000]*$/, 'no NUL character'),
    mime_type: z.string().min(1).max(256).describe('Recorded; the lines are checked when a job uses the file, as for /v1/files'),
    purpose: UploadPurpose,
    expires_after: z.unknown().optional().describe('Refused (a 400): files here are kept until deleted; leave it out'),
  })
  .meta({ id: 'CreateUploadRequest', examples: [{ bytes: 2147483648, filename: 'train.jsonl', mime_type: 'application/jsonl', purpose: 'fine-tune' }] });

export const UploadObject = z
  .object({
    id: z.string(),
    object: z.literal('upload'),
    bytes: z.number().int(),
    created_at: UnixSeconds,
    expires_at: UnixSeconds,
    filename: z.string(),
    purpose: z.string(),
    status: z.enum(['pending', 'completed', 'cancelled', 'expired']),
    file: nullable(FileObject).describe('The file the parts became, once completed'),
  })
  .meta({ id: 'UploadObject', description: 'A file sent in parts (OpenAI’s Upload); it takes parts for an hour' });

export const UploadPartObject = z
  .object({ id: z.string(), object: z.literal('upload.part'), created_at: UnixSeconds, upload_id: z.string() })
  .meta({ id: 'UploadPartObject' });

export const CompleteUploadRequest = z
  .object({
    part_ids: z.array(z.string().min(1).max(256)).min(1).max(10000).describe('The parts in the order they make the file'),
    md5: z.string().regex(/^[0-9a-fA-F]{32}$/, '32 hexadecimal digits').optional().describe('Checked against the joined file when given'),
  })
  .meta({ id: 'CompleteUploadRequest' });
