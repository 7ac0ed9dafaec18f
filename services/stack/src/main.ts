// The embedded default: one Node process hosting every service on its own port and a worker, sharing
// one platform because PGlite has a single owner. `pnpm start` runs this.
import type { FastifyInstance } from 'fastify';
import { ConfigError, loadConfig, openPlatform } from '@ftp/platform';
import { buildPreprocessingApp } from '@ftp/preprocessing';
import { buildTrainingApp } from '@ftp/training';
import { buildExportApp } from '@ftp/export';
import { buildInferenceApp } from '@ftp/inference';
import { startWorker } from '@ftp/worker';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const platform = await openPlatform(config);
  const apps: Array<[string, FastifyInstance, number]> = [
    ['preprocessing', await buildPreprocessingApp(platform), config.PREPROCESSING_PORT],
    ['training', await buildTrainingApp(platform), config.TRAINING_PORT],
    ['export', await buildExportApp(platform), config.EXPORT_PORT],
    ['inference', await buildInferenceApp(platform), config.INFERENCE_PORT],
  ];
  // One worker in this process: it is the only one, so jobs it finds running at start are orphans.
  const worker = config.START_WORKER ? await startWorker(platform, { sole: true }) : undefined;
  for (const [name, app, port] of apps) {
    await app.listen({ host: config.HOST, port });
    platform.logger.info({ service: name, url: `http://${config.HOST}:${port}` }, `${name} service listening`);
  }
  platform.logger.info({ dataDir: config.dataDir, auth: config.AUTH_MODE }, 'embedded stack ready');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    platform.logger.info({ signal }, 'stopping');
    for (const [, app] of apps) await app.close();
    await worker?.stop();
    await platform.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

await main();
