// One long-lived process of a deployment (an HTTP service, a worker, or the embedded default holding all of
// them): configuration parsed once (a bad setting stops the start naming it), the platform opened with the
// drivers the environment chooses, the watchdog that fails or re-queues the work of dead workers and
// reconciles rows with the queue, the deliverer of webhook events (every long-lived process runs both), and an
// orderly stop on SIGTERM/SIGINT.
import { ConfigError, guardProcess, loadConfig, openPlatform, type Platform } from '@ftp/platform';
import { startWatchdog } from './watchdog.ts';
import { startWebhookDeliverer } from './webhooks.ts';
import { registerDeploymentMetrics } from './deployment-metrics.ts';

/** Starts what the process is for; returns how to stop it (before the platform closes). */
export type StartProcess = (platform: Platform) => Promise<() => Promise<void>>;

export async function runProcess(name: string, start: StartProcess): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${name}: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  let platform: Platform;
  try {
    platform = await openPlatform(config);
  } catch (err) {
    process.stderr.write(`${name}: cannot start: ${(err as Error).message}\n`);
    process.exit(1);
  }
  // From here on an error nothing caught is logged, and the process lives on (process-guard.ts).
  guardProcess(platform.logger);
  const stopWork = await start(platform);
  const watchdog = startWatchdog(platform);
  const deliverer = startWebhookDeliverer(platform);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    platform.logger.info({ signal }, `${name} stopping`);
    try {
      await stopWork();
      await watchdog.stop();
      await deliverer.stop();
      await platform.close();
    } catch (err) {
      platform.logger.error({ err }, `${name} did not stop cleanly`);
      process.exit(1);
    }
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

/** The config key of each HTTP service's port. */
export const SERVICE_PORTS = {
  preprocessing: 'PREPROCESSING_PORT',
  training: 'TRAINING_PORT',
  export: 'EXPORT_PORT',
  inference: 'INFERENCE_PORT',
  openai: 'OPENAI_PORT',
  tinker: 'TINKER_PORT',
} as const satisfies Record<string, keyof Platform['config']>;

/** What runService does with the HTTP app a service builds (a Fastify instance is one): listen, and close at the stop. */
export interface ListeningApp {
  listen(options: { host: string; port: number }): Promise<unknown>;
  close(): Promise<void>;
}

/** One HTTP service as its own process (`pnpm start:<service>`), listening on its port. */
export async function runService(service: keyof typeof SERVICE_PORTS, build: (platform: Platform) => Promise<ListeningApp>): Promise<void> {
  await runProcess(service, async (platform) => {
    registerDeploymentMetrics(platform);
    const app = await build(platform);
    await app.listen({ host: platform.config.HOST, port: platform.config[SERVICE_PORTS[service]] });
    return () => app.close();
  });
}
