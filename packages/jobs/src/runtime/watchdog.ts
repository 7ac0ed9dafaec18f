// The watchdog every long-lived process runs (API processes and workers alike): on one timer, the work of dead
// workers (recovery.ts) and the rows that disagree with the queue or the workers (reconciler.ts) are repaired.
import { isOutage, type Platform } from '@ftp/platform';
import { recoverOrphans } from './recovery.ts';
import { reconcile } from './reconciler.ts';

export interface Watchdog {
  stop(): Promise<void>;
}

/** How often processes look for dead workers and workers beat their heartbeat: a quarter of the timeout, 1–15 s. */
export function watchIntervalMs(platform: Pick<Platform, 'config'>): number {
  return Math.min(15_000, Math.max(1_000, (platform.config.WORKER_TIMEOUT_S * 1000) / 4));
}

/** Runs recoverOrphans and the reconciler every watchIntervalMs in this process until stopped. While the database
 *  cannot be reached no worker can beat its heartbeat either, so after an outage this process takes nobody for dead
 *  until every worker has had WORKER_TIMEOUT_S to beat again. */
export function startWatchdog(platform: Platform): Watchdog {
  let running: Promise<void> | undefined;
  let quietUntil = 0;
  const round = async () => {
    if (Date.now() < quietUntil) return void (await platform.db.check());
    await recoverOrphans(platform);
    await reconcile(platform);
  };
  const timer = setInterval(() => {
    if (running) return;
    running = round()
      .catch((err: unknown) => {
        if (isOutage(err) && err.dependency === 'database') quietUntil = Date.now() + platform.config.WORKER_TIMEOUT_S * 1000;
        platform.logger.warn({ err }, 'looking for stopped workers and lost work failed');
      })
      .finally(() => (running = undefined));
  }, watchIntervalMs(platform));
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
