// /v1/fine_tuning/checkpoints/{checkpoint}/permissions: other users let run one of the caller's checkpoints.
import { z } from 'zod';
import { nullable, UnixSeconds } from './common.ts';

export const CheckpointPermission = z
  .object({ id: z.string(), object: z.literal('checkpoint.permission'), created_at: UnixSeconds, project_id: z.string().describe('The user let run the checkpoint') })
  .meta({ id: 'CheckpointPermission', description: 'Another user (OpenAI’s project: a user id here) let chat with, evaluate and fine-tune from one checkpoint' });

export const CheckpointPermissionList = z
  .object({ object: z.literal('list'), data: z.array(CheckpointPermission), has_more: z.boolean(), first_id: nullable(z.string()), last_id: nullable(z.string()) })
  .meta({ id: 'CheckpointPermissionList' });

export const CreateCheckpointPermissionRequest = z
  .object({ project_ids: z.array(z.string().min(1).max(256).regex(/^[^\u0000]*$/, 'no NUL character')).min(1).max(100).describe('The user ids to let run the checkpoint') })
  .meta({ id: 'CreateCheckpointPermissionRequest', examples: [{ project_ids: ['alice'] }] });

export const CheckpointPermissionQuery = z.object({
  after: z.string().min(1).max(256).optional().describe('The last id of the previous page'),
  limit: z.coerce.number().int().min(1).max(100).default(10),
  order: z.enum(['ascending', 'descending']).default('descending'),
  project_id: z.string().min(1).max(256).optional().describe('Only this user’s permission'),
});

export const CheckpointPermissionDeleted = z
  .object({ id: z.string(), object: z.literal('checkpoint.permission'), deleted: z.literal(true) })
  .meta({ id: 'CheckpointPermissionDeleted' });
