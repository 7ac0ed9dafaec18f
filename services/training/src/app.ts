// Builds the training service (interface.md 4.2 + decisions.md "Training", and its sweeps) on a platform; no listen.
import type { FastifyInstance } from 'fastify';
import { createServiceApp, registerApiDocs, registerHealthRoute, registerMetricsRoute, type Platform } from '@ftp/platform';
import { jobRoutes } from './routes/jobs.ts';
import { sweepRoutesPlugin } from './routes/sweeps.ts';

export async function buildTrainingApp(platform: Platform): Promise<FastifyInstance> {
  const app = createServiceApp({ platform, service: 'training' });
  await registerApiDocs(app, 'training');
  registerHealthRoute(app, 'training');
  registerMetricsRoute(app, 'training');
  await app.register(jobRoutes);
  await app.register(sweepRoutesPlugin);
  return app;
}
