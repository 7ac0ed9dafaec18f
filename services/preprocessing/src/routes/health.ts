// GET /health of the preprocessing service.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { checkHealth } from '@ftp/platform';
import { preprocessingRoutes, services } from '@ftp/schema';

export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.withTypeProvider<ZodTypeProvider>().route({
    ...preprocessingRoutes.getHealth,
    handler: async (_request, reply) => {
      const report = await checkHealth(app.platform, 'preprocessing', services.preprocessing.version);
      return reply.code(report.status === 'ok' ? 200 : 503).send(report);
    },
  });
}
