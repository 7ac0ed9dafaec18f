// Runs the inference service alone (scaled-out mode); the embedded stack uses services/stack.
import { loadConfig, openPlatform } from '@ftp/platform';
import { buildInferenceApp } from './app.ts';

const config = loadConfig();
const platform = await openPlatform(config);
const app = await buildInferenceApp(platform);
await app.listen({ host: config.HOST, port: config.INFERENCE_PORT });
