// Builds the Tinker-compatible service (decisions.md "Own training loops") on a platform; no listen. It holds no model:
// the runs live in workers (lane `session`), and every call is a row the worker holding its run answers.
import type { FastifyInstance } from 'fastify';
import { createServiceApp, registerApiDocs, registerHealthRoute, registerMetricsRoute, type Platform } from '@ftp/platform';
import { registerTinkerRoutes } from './routes/tinker.ts';

/** The SDK's key as our credential: `tml-<API key>` in token mode (the SDK refuses keys without the prefix), a JWT
 *  (`eyJ…`) as it is. */
export function tinkerCredential(key: string | string[] | undefined): string | undefined {
  if (typeof key !== 'string' || key === '') return undefined;
  return `Bearer ${key.startsWith('tml-') ? key.slice(4) : key}`;
}

export async function buildTinkerApp(platform: Platform): Promise<FastifyInstance> {
  const app = createServiceApp({ platform, service: 'tinker', credential: (headers) => tinkerCredential(headers['x-api-key']) ?? headers.authorization });
  await registerApiDocs(app, 'tinker');
  registerHealthRoute(app, 'tinker');
  registerMetricsRoute(app, 'tinker');
  registerTinkerRoutes(app);
  return app;
}
