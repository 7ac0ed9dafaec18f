// A worker process (scaled out: any number, on any machine that reaches PostgreSQL, Redis and the S3 store):
// `pnpm start:worker`. WORKER_QUEUES says which queues it serves; SIGTERM hands its jobs back and exits.
import { runProcess } from '@ftp/jobs';
import { startWorker } from './worker.ts';

await runProcess('worker', async (platform) => {
  const worker = await startWorker(platform);
  return () => worker.stop();
});
