// /v1/models: base models and the caller's fine-tuned models.
import { z } from 'zod';
import { UnixSeconds } from './common.ts';

export const ModelObject = z
  .object({ id: z.string(), object: z.literal('model'), created: UnixSeconds, owned_by: z.string().describe('"system" for a base model, else the user id') })
  .meta({ id: 'ModelObject' });
export const ModelList = z.object({ object: z.literal('list'), data: z.array(ModelObject) }).meta({ id: 'ModelList' });
export const ModelDeleted = z.object({ id: z.string(), object: z.literal('model'), deleted: z.literal(true) }).meta({ id: 'ModelDeleted' });
