// Training service schemas, one module per part: the job request with every hyperparameter of interface.md 2.12
// (request.ts), GRPO's rewards (rewards.ts), the pre-flight report (preflight.ts), the job status resource with its
// events and checkpoints (job.ts) and the workers (workers.ts). The graders rewards build on are ../graders.ts: the /v1
// surface and POST /evaluation take them too. The order of these lines is the order in which the schemas register
// their ids with zod, which is the order of the components in openapi/training.json: keep it.
export * from './preflight.ts';
export * from './rewards.ts';
export * from './request.ts';
export * from './job.ts';
export * from './workers.ts';
export * from './sweeps.ts';
