// Every queue's name and payload, defined once; API routes add, workers consume. Payloads carry ids only.
import { z } from 'zod';
import { defineQueue } from './queue.ts';

export const trainingQueue = defineQueue('train', z.object({ jobId: z.string().min(1) }));
export const exportQueue = defineQueue('export', z.object({ exportId: z.string().min(1) }));
