// Builds the OpenAI-compatible service (decisions.md, "The OpenAI-compatible surface") on a platform; no listen. It is
// a second face of the same datasets, jobs and models: files are uploads, fine-tuning jobs are training jobs, chat (and
// responses, which run as chat) runs on a worker through the infer queue. Errors are OpenAI's body, which the SDKs parse.
import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import { MULTIPART_LIMITS } from '@ftp/schema';
import { createServiceApp, registerApiDocs, registerHealthRoute, registerMetricsRoute, type Platform } from '@ftp/platform';
import { fileRoutes } from './routes/files.ts';
import { fineTuningRoutes } from './routes/fine-tuning.ts';
import { graderRoutes } from './routes/graders.ts';
import { modelRoutes } from './routes/models.ts';
import { chatRoutes } from './routes/chat.ts';
import { responseRoutes } from './routes/responses.ts';
import { uploadRoutes } from './routes/uploads.ts';
import { batchRoutes } from './routes/batches.ts';
import { checkpointRoutes } from './routes/checkpoints.ts';
import { webhookRoutes } from './routes/webhooks.ts';

export async function buildOpenAiApp(platform: Platform): Promise<FastifyInstance> {
  const app = createServiceApp({ platform, errorStyle: 'openai', service: 'openai' });
  await app.register(multipart, {
    limits: { ...MULTIPART_LIMITS, fileSize: platform.config.MAX_UPLOAD_BYTES },
  });
  await registerApiDocs(app, 'openai');
  registerHealthRoute(app, 'openai');
  registerMetricsRoute(app, 'openai');
  await app.register(fileRoutes);
  await app.register(uploadRoutes);
  await app.register(batchRoutes);
  await app.register(fineTuningRoutes);
  await app.register(checkpointRoutes);
  await app.register(webhookRoutes);
  await app.register(graderRoutes);
  await app.register(modelRoutes);
  await app.register(chatRoutes);
  await app.register(responseRoutes);
  return app;
}
