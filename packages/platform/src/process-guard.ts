// The last line of defence of a long-lived process: an error no code path caught (a stream's 'error' with no listener,
// a throwing timer, a rejected promise nobody awaited) is logged with what is known of it and the process goes on,
// instead of taking every service, the worker and any training job down with it. Each cause found is still fixed
// where it starts; this only keeps one missed cause from ending the process. Tests read `caught` to prove a fix did
// not merely lean on this.
import type { Logger } from 'pino';

export interface ProcessGuard {
  /** How many errors reached the guard since it was installed. */
  readonly caught: number;
  uninstall(): void;
}

export const LAST_LINE_OF_DEFENCE = "an unexpected error reached the process's last line of defence; the process goes on";

export function guardProcess(logger: Pick<Logger, 'error'>): ProcessGuard {
  let caught = 0;
  const onException = (err: Error, origin: string) => {
    caught += 1;
    logger.error({ err, origin }, LAST_LINE_OF_DEFENCE);
  };
  const onRejection = (reason: unknown) => {
    caught += 1;
    logger.error({ err: reason, origin: 'unhandledRejection' }, LAST_LINE_OF_DEFENCE);
  };
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return {
    get caught() {
      return caught;
    },
    uninstall() {
      process.off('uncaughtException', onException);
      process.off('unhandledRejection', onRejection);
    },
  };
}
