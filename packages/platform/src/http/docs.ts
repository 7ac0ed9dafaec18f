// Serves a service's OpenAPI document (the same one committed under openapi/) and Swagger UI at /docs.
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { readOpenApiDocument, type ServiceName } from '@ftp/schema';

export async function registerApiDocs(app: FastifyInstance, service: ServiceName): Promise<void> {
  const document = await readOpenApiDocument(service);
  await app.register(fastifySwagger, { mode: 'static', specification: { document: document as never } });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
}
