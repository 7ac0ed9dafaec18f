// A worker process (scaled out: any number, on any machine that reaches PostgreSQL, Redis and the S3 store):
// `pnpm start:worker`. WORKER_QUEUES says which queues it serves; SIGTERM hands its jobs back and exits. Its metrics
// are at WORKER_METRICS_PORT.
import { runProcess } from '@ftp/jobs/runtime';
import { startWorker } from './worker.ts';
import { serveWorkerMetrics } from './metrics-server.ts';

await runProcess('worker', async (platform) => {
  const worker = await startWorker(platform);
  const stopMetrics = await serveWorkerMetrics(platform);
  return async () => {
    await worker.stop();
    await stopMetrics();
  };
});
