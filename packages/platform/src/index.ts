// Public surface of the platform package: config, logging, metadata store, blobs, queue, secrets, workers
// registry, auth, errors, HTTP base.
export * from './env.ts';
export * from './errors.ts';
export * from './ids.ts';
export * from './logging.ts';
export * from './process-guard.ts';
export * from './blobs/blob-store.ts';
export { FolderBlobStore } from './blobs/folder-store.ts';
export { S3BlobStore, type S3BlobStoreOptions } from './blobs/s3-store.ts';
export { openEmbeddedDatabase, type Database, type Queryable } from './db/database.ts';
export { openPostgresDatabase } from './db/postgres.ts';
export * from './db/datasets-repository.ts';
export * from './db/api-keys-repository.ts';
export * from './db/jobs-repository.ts';
export * from './db/exports-repository.ts';
export * from './db/evaluations-repository.ts';
export * from './db/workers-repository.ts';
export * from './db/work-rows.ts';
export * from './secrets.ts';
export * from './queue.ts';
export * from './outages.ts';
export { BullMqQueue, type BullMqQueueOptions } from './queue-bullmq.ts';
export * from './auth.ts';
export * from './platform.ts';
export { createServiceApp, type ServiceAppOptions } from './http/service-app.ts';
export { checkHealth, registerHealthRoute, type HealthReport } from './http/health.ts';
export { RequestValidationError } from './http/validation.ts';
export { registerApiDocs } from './http/docs.ts';
