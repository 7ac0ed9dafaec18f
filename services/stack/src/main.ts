// The embedded default: one Node process hosting every service on its own port and a worker, sharing one
// platform because PGlite has a single owner. `pnpm start` runs this. The same code as the scaled-out
// processes: only the drivers differ (PGlite, a folder, the in-process queue unless the environment says else).
import type { FastifyInstance } from 'fastify';
import { recoverOrphans, registerDeploymentMetrics, requeuePending, runProcess, SERVICE_PORTS } from '@ftp/jobs/runtime';
import { buildPreprocessingApp } from '@ftp/preprocessing';
import { buildTrainingApp } from '@ftp/training';
import { buildExportApp } from '@ftp/export';
import { buildInferenceApp } from '@ftp/inference';
import { buildOpenAiApp } from '@ftp/openai';
import { buildTinkerApp } from '@ftp/tinker';
import { buildConsoleApp, consoleUpstreams } from '@ftp/console';
import { startWorker } from '@ftp/worker';

await runProcess('embedded stack', async (platform) => {
  const { config, logger } = platform;
  // With the embedded store this process is the only one: every worker it finds registered died with an earlier
  // run (their jobs fail, or are queued again to resume), and the in-process queue starts empty. The queued rows
  // go back in first: recovery adds what it queues again itself, and would otherwise be added twice.
  await requeuePending(platform);
  if (!config.DATABASE_URL) await recoverOrphans(platform, { everyWorkerGone: true });
  // One registry for the whole process: every service's /metrics carries the services', the worker's and these.
  registerDeploymentMetrics(platform);

  const apps: Array<[keyof typeof SERVICE_PORTS, FastifyInstance]> = [
    ['preprocessing', await buildPreprocessingApp(platform)],
    ['training', await buildTrainingApp(platform)],
    ['export', await buildExportApp(platform)],
    ['inference', await buildInferenceApp(platform)],
    ['openai', await buildOpenAiApp(platform)],
    ['tinker', await buildTinkerApp(platform)],
  ];
  const worker = config.START_WORKER ? await startWorker(platform) : undefined;
  for (const [name, app] of apps) {
    const port = config[SERVICE_PORTS[name]];
    await app.listen({ host: config.HOST, port });
    logger.info({ service: name, url: `http://${config.HOST}:${port}` }, `${name} service listening`);
  }
  // The web console: static pages that reach the services above through its own /api/<service>/….
  const consoleApp = await buildConsoleApp({ upstreams: consoleUpstreams(config), logger });
  await consoleApp.listen({ host: config.HOST, port: config.CONSOLE_PORT });
  logger.info({ service: 'console', url: `http://${config.HOST}:${config.CONSOLE_PORT}` }, `console listening: open http://${config.HOST}:${config.CONSOLE_PORT}`);
  logger.info({ dataDir: config.dataDir, auth: config.AUTH_MODE }, 'embedded stack ready');
  return async () => {
    await consoleApp.close();
    for (const [, app] of apps) await app.close();
    await worker?.stop();
  };
});
