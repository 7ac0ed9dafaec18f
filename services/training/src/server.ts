// Runs the training service alone (scaled-out mode, workers elsewhere); the embedded stack uses services/stack.
import { loadConfig, openPlatform } from '@ftp/platform';
import { buildTrainingApp } from './app.ts';

const config = loadConfig();
const platform = await openPlatform(config);
const app = await buildTrainingApp(platform);
await app.listen({ host: config.HOST, port: config.TRAINING_PORT });
