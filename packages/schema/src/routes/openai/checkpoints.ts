// Route contracts of /v1/fine_tuning/checkpoints/{checkpoint}/permissions.
import { z } from 'zod';
import { CheckpointPermissionDeleted, CheckpointPermissionList, CheckpointPermissionQuery, CreateCheckpointPermissionRequest } from '../../openai/checkpoints.ts';
import { bearerRequired, defineRoute } from '../contract.ts';
import { common, invalid, notFound } from './common.ts';

const CheckpointName = z.object({ fine_tuned_model_checkpoint: z.string().min(1).max(512).describe('A checkpoint’s model name, ft:…:ckpt-step-<n>') });
const checkpointNotFound = notFound('checkpoint (ft:…:ckpt-step-<n>, stored)');

export const checkpointRoutes = {
  createCheckpointPermissions: defineRoute({
    method: 'POST',
    url: '/v1/fine_tuning/checkpoints/:fine_tuned_model_checkpoint/permissions',
    schema: {
      operationId: 'createCheckpointPermissions',
      summary: 'Let other users run one of your checkpoints',
      description:
        'Each user named (OpenAI’s project_ids are user ids here) may then chat with the checkpoint, evaluate it and fine-tune from it by its ' +
        'name; nothing else of the job is shared (its events, files, exports and other checkpoints stay the owner’s). Only the owner ' +
        'manages permissions. Granting one already granted returns it unchanged.',
      tags: ['fine-tuning'],
      security: bearerRequired,
      params: CheckpointName,
      body: CreateCheckpointPermissionRequest,
      response: { 200: CheckpointPermissionList, 400: invalid, 404: checkpointNotFound, ...common },
    },
  }),

  listCheckpointPermissions: defineRoute({
    method: 'GET',
    url: '/v1/fine_tuning/checkpoints/:fine_tuned_model_checkpoint/permissions',
    schema: {
      operationId: 'listCheckpointPermissions',
      summary: 'The users let run one of your checkpoints',
      description: 'Newest first unless order is ascending; project_id picks one user’s.',
      tags: ['fine-tuning'],
      security: bearerRequired,
      params: CheckpointName,
      querystring: CheckpointPermissionQuery,
      response: { 200: CheckpointPermissionList, 400: invalid, 404: checkpointNotFound, ...common },
    },
  }),

  deleteCheckpointPermission: defineRoute({
    method: 'DELETE',
    url: '/v1/fine_tuning/checkpoints/:fine_tuned_model_checkpoint/permissions/:permission_id',
    schema: {
      operationId: 'deleteCheckpointPermission',
      summary: 'Stop letting a user run one of your checkpoints',
      description: 'The user’s requests naming the checkpoint are a 404 from then on; jobs it already trained from it keep their own models.',
      tags: ['fine-tuning'],
      security: bearerRequired,
      params: CheckpointName.extend({ permission_id: z.string().min(1).max(256) }),
      response: { 200: CheckpointPermissionDeleted, 400: invalid, 404: notFound('checkpoint, or permission of it,'), ...common },
    },
  }),
};
