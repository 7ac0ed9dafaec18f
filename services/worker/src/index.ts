// The worker as a library: the embedded stack starts it in-process; the services use its model lookup and
// JobModels (a trained job's adapter, merged model and GGUF files, built on demand).
export { startWorker, detectDevices, type WorkerHandle, type WorkerOptions } from './worker.ts';
export { CANCELLED_BY_USER, WORKER_STOPPED } from './training/run-training-job.ts';
export { JobModels, ModelBuildError, baseModelFolder, baseModelGguf, jobWorkDir, runCoreStep, type ModelBuildOptions } from './models/job-models.ts';
export { locateBaseModel, type ModelLocation } from './training/model-store.ts';
export { HUB_TOKEN_LOST } from './export/run-export-job.ts';
export { queueExport, type NewExport } from './export/queue-export.ts';
