// Runs the preprocessing service alone (scaled-out mode); the embedded stack uses services/stack instead.
import { loadConfig, openPlatform } from '@ftp/platform';
import { buildPreprocessingApp } from './app.ts';

const config = loadConfig();
const platform = await openPlatform(config);
const app = await buildPreprocessingApp(platform);
await app.listen({ host: config.HOST, port: config.PREPROCESSING_PORT });
