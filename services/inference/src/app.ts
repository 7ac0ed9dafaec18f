// Builds the inference service (interface.md 4.4 + decisions.md "Inference and evaluation") on a platform; no
// listen. It holds no model: it validates, queues the work for a worker and waits for the answer.
import type { FastifyInstance } from 'fastify';
import { createServiceApp, registerApiDocs, registerHealthRoute, registerMetricsRoute, type Platform } from '@ftp/platform';
import { registerInferenceRoutes } from './routes/inference.ts';

export async function buildInferenceApp(platform: Platform): Promise<FastifyInstance> {
  const app = createServiceApp({ platform, service: 'inference' });
  await registerApiDocs(app, 'inference');
  registerHealthRoute(app, 'inference');
  registerMetricsRoute(app, 'inference');
  registerInferenceRoutes(app);
  return app;
}
