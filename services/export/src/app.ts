// Builds the export service (interface.md 4.3 + decisions.md "Export") on a platform; no listen.
import type { FastifyInstance } from 'fastify';
import { createServiceApp, registerApiDocs, registerHealthRoute, registerMetricsRoute, type Platform } from '@ftp/platform';
import { exportRoutes } from './routes/exports.ts';

export async function buildExportApp(platform: Platform): Promise<FastifyInstance> {
  const app = createServiceApp({ platform, service: 'export' });
  await registerApiDocs(app, 'export');
  registerHealthRoute(app, 'export');
  registerMetricsRoute(app, 'export');
  await app.register(exportRoutes);
  return app;
}
