// GET /metrics on every service, and the request histogram every service feeds (metrics.ts). Metrics are the
// operator's: in token and jwt modes they take METRICS_TOKEN, never a user's key, and no one reads them while it is
// unset.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { services, type ServiceName } from '@ftp/schema';
import { AppError, Unauthorized } from '../errors.ts';
import { bearerToken } from '../auth.ts';
import type { Config } from '../env.ts';
import type { Metrics } from '../metrics.ts';

/** 403: the operator has not allowed what was asked (metrics without METRICS_TOKEN in token and jwt modes). */
class Forbidden extends AppError {
  readonly statusCode = 403;
}

/** Times every request the app answers into ftp_http_request_duration_seconds, labelled by the route's template
 *  (`/jobs/:job_id`, never the id itself); requests no route serves are `unmatched`. */
export function instrumentRequests(app: FastifyInstance, metrics: Metrics, service: string): void {
  app.addHook('onResponse', async (request, reply) => {
    metrics.httpRequestDuration.observe(
      { service, route: request.routeOptions.url ?? 'unmatched', method: request.method, status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
}

/** Whether `request` may read the metrics: anyone with AUTH_MODE none (unless METRICS_TOKEN is set), else only with
 *  METRICS_TOKEN. */
export function checkMetricsCredential(config: Config, authorization: string | undefined): void {
  const expected = config.METRICS_TOKEN;
  if (!expected) {
    if (config.AUTH_MODE === 'none') return;
    throw new Forbidden(`metrics are off in AUTH_MODE=${config.AUTH_MODE} until the operator sets METRICS_TOKEN; then send it as \`Authorization: Bearer <METRICS_TOKEN>\``);
  }
  const sent = bearerToken(authorization) ?? '';
  const [a, b] = [Buffer.from(sent), Buffer.from(expected)];
  if (a.length !== b.length || !timingSafeEqual(a, b)) {
    throw new Unauthorized('metrics need `Authorization: Bearer <METRICS_TOKEN>` (the operator\'s token, not an API key)');
  }
}

export function registerMetricsRoute(app: FastifyInstance, service: ServiceName): void {
  const contract = services[service].routes.find((r) => r.url === '/metrics' && r.method === 'GET');
  if (!contract) throw new Error(`the ${service} contract has no GET /metrics`);
  const { config, metrics } = app.platform;
  app.withTypeProvider<ZodTypeProvider>().route({
    ...contract,
    handler: async (request: FastifyRequest, reply) => {
      checkMetricsCredential(config, request.headers.authorization);
      return reply.type(metrics.contentType).send(await metrics.render());
    },
  });
}
