// Runs the export service alone (scaled-out mode, workers elsewhere); the embedded stack uses services/stack.
import { loadConfig, openPlatform } from '@ftp/platform';
import { buildExportApp } from './app.ts';

const config = loadConfig();
const platform = await openPlatform(config);
const app = await buildExportApp(platform);
await app.listen({ host: config.HOST, port: config.EXPORT_PORT });
