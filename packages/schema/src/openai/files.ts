// /v1/files: the caller's files (training data, a batch's input, a batch's output).
import { z } from 'zod';
import { nullable, UnixSeconds } from './common.ts';

/** What a file is for: training data, a batch's input file (POST /v1/batches), or a batch's output or error file (written
 *  by the batch; not uploaded). */
export const FilePurpose = z.enum(['fine-tune', 'batch', 'batch_output']).describe('fine-tune (training data), batch (a batch’s input), batch_output (written by a batch)');

export const FileObject = z
  .object({
    id: z.string(),
    object: z.literal('file'),
    bytes: z.number().int().nonnegative(),
    created_at: UnixSeconds,
    filename: z.string(),
    purpose: FilePurpose,
    status: z.literal('processed').describe('Stored and readable (each line is checked when a job uses it)'),
    status_details: z.null(),
  })
  .meta({ id: 'FileObject', description: 'An uploaded file: the same upload POST /datasets/upload makes (id = dataset_id)' });
export type FileObject = z.infer<typeof FileObject>;

export const FileList = z
  .object({
    object: z.literal('list'),
    data: z.array(FileObject),
    has_more: z.boolean(),
    first_id: nullable(z.string()),
    last_id: nullable(z.string()),
  })
  .meta({ id: 'FileList' });

export const FileDeleted = z.object({ id: z.string(), object: z.literal('file'), deleted: z.literal(true) }).meta({ id: 'FileDeleted' });

export const FileListQuery = z.object({
  after: z.string().min(1).max(256).optional().describe('The last id of the previous page'),
  limit: z.coerce.number().int().min(1).max(10000).default(10000),
  order: z.enum(['asc', 'desc']).default('desc'),
  purpose: z.string().optional().describe('Only files of this purpose (fine-tune, batch, batch_output); any other lists none'),
});
