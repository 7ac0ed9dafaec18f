// A scaled-out worker's own /metrics (WORKER_METRICS_PORT on HOST): what it trained and generated, its GPUs, its
// process. It serves nothing else. A port already taken is said in the log and the worker works on without it: its
// work matters more than its metrics.
import http from 'node:http';
import { AppError, checkMetricsCredential, type Platform } from '@ftp/platform';

export async function serveWorkerMetrics(platform: Platform): Promise<() => Promise<void>> {
  const { config, logger, metrics } = platform;
  if (config.WORKER_METRICS_PORT === 0) return async () => undefined;
  const server = http.createServer((request, response) => {
    void (async () => {
      if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
        response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: `no endpoint ${request.method} ${request.url}; a worker serves GET /metrics only` }));
        return;
      }
      try {
        checkMetricsCredential(config, request.headers.authorization);
        response.writeHead(200, { 'content-type': metrics.contentType }).end(await metrics.render());
      } catch (err) {
        const status = err instanceof AppError ? err.statusCode : 500;
        if (status === 500) logger.error({ err }, 'metrics could not be read');
        response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: status === 500 ? 'internal error' : (err as Error).message }));
      }
    })();
  });
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', (err) => {
      logger.error({ err, port: config.WORKER_METRICS_PORT }, `the worker's metrics cannot listen on ${config.HOST}:${config.WORKER_METRICS_PORT} (${(err as Error).message}); it works on without /metrics: give each worker of a machine its own WORKER_METRICS_PORT`);
      resolve(false);
    });
    server.listen(config.WORKER_METRICS_PORT, config.HOST, () => resolve(true));
  });
  if (listening) logger.info({ url: `http://${config.HOST}:${config.WORKER_METRICS_PORT}/metrics` }, 'worker metrics listening');
  return () => new Promise<void>((resolve) => (listening ? server.close(() => resolve()) : resolve()));
}
