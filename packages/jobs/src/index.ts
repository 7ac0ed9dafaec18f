// The domain both the API processes and the workers stand on: queue definitions, the model store lookup, a job's
// files and their names, export queuing, presenters, recovery of dead workers' work, and the process runner.
export * from './queues.ts';
export * from './messages.ts';
export * from './model-store.ts';
export * from './chat-template.ts';
export * from './tool-call-output.ts';
export * from './model-choice.ts';
export * from './model-names.ts';
export * from './job-files.ts';
export * from './exports.ts';
export * from './datasets.ts';
export * from './presenters.ts';
export * from './readable.ts';
export * from './conversations.ts';
export * from './recovery.ts';
export * from './reconciler.ts';
export * from './watchdog.ts';
export * from './process.ts';
export * from './deployment-metrics.ts';
export * from './request-work.ts';
export * from './grading.ts';
export * from './preflight.ts';
export * from './submit.ts';
export * from './job-lifecycle.ts';
