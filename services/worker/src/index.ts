// The worker as a library: its process (main.ts) and the embedded stack start it; the models CLI copies folders
// into the store with it; tests drive its evaluation processor and look at its work folders.
export { startWorker, type WorkerHandle, type WorkerOptions } from './worker.ts';
export { jobWorkDir } from './models/job-models.ts';
export { uploadFolder } from './models/blob-folders.ts';
export { InferenceEngines } from './inference/engines.ts';
export { runEvaluation } from './inference/run-evaluation.ts';
