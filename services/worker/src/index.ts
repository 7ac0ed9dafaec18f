// The worker as a library: the embedded stack starts it in-process; the training service uses its model lookup.
export { startWorker, detectDevices, type WorkerHandle, type WorkerOptions } from './worker.ts';
export { CANCELLED_BY_USER, WORKER_STOPPED, jobWorkDir } from './training/run-training-job.ts';
export { locateBaseModel, type ModelLocation } from './training/model-store.ts';
