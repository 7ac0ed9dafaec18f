// The worker as a library: its process (main.ts) and the embedded stack start it; tests drive its processors.
export { startWorker, type WorkerHandle, type WorkerOptions } from './worker.ts';
export { detectDevices } from './devices.ts';
export { JobModels, jobWorkDir } from './models/job-models.ts';
export { ensureBaseModel, ModelBuildError } from './models/base-models.ts';
export { uploadFolder } from './models/blob-folders.ts';
export { InferenceEngines } from './inference/engines.ts';
export { runEvaluation } from './inference/run-evaluation.ts';
