// Builds the inference service (interface.md 4.4 + decisions.md "Inference and evaluation", and the evaluations with
// benchmarks and pairwise comparisons of "Sweeps and evaluation that decides") on a platform; no listen. It holds no model: it validates, queues
// the work for a worker and waits for the answer (or, for an evaluation with benchmarks, answers with its row).
import type { FastifyInstance } from 'fastify';
import { createServiceApp, registerApiDocs, registerHealthRoute, registerMetricsRoute, type Platform } from '@ftp/platform';
import { registerInferenceRoutes } from './routes/inference.ts';
import { registerEvaluationRoutes } from './routes/evaluations.ts';
import { registerComparisonRoutes } from './routes/comparisons.ts';

export async function buildInferenceApp(platform: Platform): Promise<FastifyInstance> {
  const app = createServiceApp({ platform, service: 'inference' });
  await registerApiDocs(app, 'inference');
  registerHealthRoute(app, 'inference');
  registerMetricsRoute(app, 'inference');
  registerInferenceRoutes(app);
  registerEvaluationRoutes(app);
  registerComparisonRoutes(app);
  return app;
}
