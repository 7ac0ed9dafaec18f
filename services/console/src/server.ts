// Runs the web console as its own small process (`pnpm start:console`, scaled out): static files and the /api
// forwarding, on CONSOLE_PORT. It holds no database and no queue, so it opens no platform: configuration only.
import { ConfigError, createLogger, guardProcess, loadConfig, type Config } from '@ftp/platform';
import { buildConsoleApp } from './app.ts';
import { consoleUpstreams } from './upstreams.ts';

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`console: ${err.message}\n`);
  process.exit(2);
}
const logger = createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT, name: 'console' });
// An error nothing caught (a download's stream, a timer) is logged and the console lives on (process-guard.ts).
guardProcess(logger);
const app = await buildConsoleApp({ upstreams: consoleUpstreams(config), logger });
await app.listen({ host: config.HOST, port: config.CONSOLE_PORT });

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void app.close().then(() => process.exit(0));
  });
}
