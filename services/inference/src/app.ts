// Builds the inference service (interface.md 4.4 + decisions.md "Inference and evaluation") on a platform; no
// listen. The app owns the warm engines (the ML core server and llama.cpp) and closes them with itself.
import type { FastifyInstance } from 'fastify';
import { createServiceApp, registerApiDocs, registerHealthRoute, type Platform } from '@ftp/platform';
import { InferenceEngines, type InferenceEnginesOptions } from './engines.ts';
import { registerInferenceRoutes } from './routes/inference.ts';

export type InferenceAppOptions = InferenceEnginesOptions;

export async function buildInferenceApp(platform: Platform, options: InferenceAppOptions = {}): Promise<FastifyInstance> {
  const app = createServiceApp({ platform });
  await registerApiDocs(app, 'inference');
  registerHealthRoute(app, 'inference');
  const engines = new InferenceEngines(platform, options);
  app.addHook('onClose', () => engines.close());
  registerInferenceRoutes(app, engines);
  return app;
}
