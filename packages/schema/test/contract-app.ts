// A Fastify app serving every contract of one service with stub handlers, validating through
// fastify-type-provider-zod and answering validation failures the way decisions.md asks (422 + detail).
import Fastify, { type FastifyInstance } from 'fastify';
import {
  hasZodFastifySchemaValidationErrors,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { fastifyValidationDetail, services, type RouteContract, type ServiceName } from '../src/index.ts';

export async function buildContractApp(service: ServiceName): Promise<FastifyInstance> {
  // Ids may be 256 characters; fastify's default of 100 would answer 414 before the schema is asked.
  const app = Fastify({ logger: false, maxParamLength: 300 });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler((error, request, reply) => {
    if (hasZodFastifySchemaValidationErrors(error)) {
      return reply.code(422).send({ detail: fastifyValidationDetail(error, request) });
    }
    return reply.code(500).send({ detail: String(error) });
  });
  const routes = app.withTypeProvider<ZodTypeProvider>();
  for (const contract of services[service].routes) {
    // 204 has no response schema, so a request that got through validation says so without a body.
    routes.route({ ...contract, handler: (_request, reply) => reply.code(204).send() });
  }
  await app.ready();
  return app;
}

export function findRoute(service: ServiceName, operationId: string): RouteContract {
  const route = services[service].routes.find((candidate) => candidate.schema.operationId === operationId);
  if (route === undefined) throw new Error(`no ${operationId} in ${service}`);
  return route;
}

export function urlOf(route: RouteContract, params: Record<string, string> = {}, query: Record<string, string> = {}): string {
  const path = route.url.replace(/:(\w+)/g, (_match, name: string) => encodeURIComponent(params[name] ?? ''));
  const search = new URLSearchParams(query).toString();
  return search === '' ? path : `${path}?${search}`;
}
