// Public surface of the platform package: config, logging, metadata store, blobs, queue, auth, errors, HTTP base.
export * from './env.ts';
export * from './errors.ts';
export * from './ids.ts';
export * from './logging.ts';
export * from './blobs/blob-store.ts';
export { FolderBlobStore } from './blobs/folder-store.ts';
export { openEmbeddedDatabase, type Database, type Queryable } from './db/database.ts';
export * from './db/datasets-repository.ts';
export * from './db/api-keys-repository.ts';
export * from './queue.ts';
export * from './auth.ts';
export * from './platform.ts';
export { createServiceApp, type ServiceAppOptions } from './http/service-app.ts';
export { checkHealth, type HealthReport } from './http/health.ts';
export { RequestValidationError } from './http/validation.ts';
export { registerApiDocs } from './http/docs.ts';
