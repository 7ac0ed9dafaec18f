// Builds the preprocessing service (interface.md 4.1) on a platform; no listen. Tests use inject().
import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import { MULTIPART_LIMITS } from '@ftp/schema';
import { createServiceApp, registerApiDocs, registerHealthRoute, registerMetricsRoute, type Platform } from '@ftp/platform';
import { datasetRoutes } from './routes/datasets.ts';

export async function buildPreprocessingApp(platform: Platform): Promise<FastifyInstance> {
  const app = createServiceApp({ platform, service: 'preprocessing' });
  await app.register(multipart, {
    // The file part streams to storage; only tiny text fields are buffered.
    limits: { ...MULTIPART_LIMITS, fileSize: platform.config.MAX_UPLOAD_BYTES },
  });
  await registerApiDocs(app, 'preprocessing');
  registerHealthRoute(app, 'preprocessing');
  registerMetricsRoute(app, 'preprocessing');
  await app.register(datasetRoutes);
  return app;
}
