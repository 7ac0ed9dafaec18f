// GET /health for every service: probes the metadata store, blob store and queue; 200 ok / 503 degraded.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { services, type ServiceName } from '@ftp/schema';
import type { Platform } from '../platform.ts';

export interface HealthReport {
  status: 'ok' | 'degraded';
  service: string;
  version: string;
  checks: { db: string; storage: string; queue: string };
}

async function probe(check: () => Promise<void>): Promise<string> {
  try {
    await check();
    return 'ok';
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
}

export async function checkHealth(platform: Platform, service: string, version: string): Promise<HealthReport> {
  const [db, storage, queue] = await Promise.all([
    probe(() => platform.db.check()),
    probe(() => platform.blobs.check()),
    probe(() => platform.queue.check()),
  ]);
  const ok = db === 'ok' && storage === 'ok' && queue === 'ok';
  return { status: ok ? 'ok' : 'degraded', service, version, checks: { db, storage, queue } };
}

/** Registers the service's health contract (every service's contract is `<service>Routes.getHealth`). */
export function registerHealthRoute(app: FastifyInstance, service: ServiceName): void {
  const info = services[service];
  const contract = info.routes.find((r) => r.url === '/health' && r.method === 'GET');
  if (!contract) throw new Error(`the ${service} contract has no GET /health`);
  app.withTypeProvider<ZodTypeProvider>().route({
    ...contract,
    handler: async (_request, reply) => {
      const report = await checkHealth(app.platform, service, info.version);
      return reply.code(report.status === 'ok' ? 200 : 503).send(report);
    },
  });
}
