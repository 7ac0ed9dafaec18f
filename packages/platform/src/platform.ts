// Everything a service or worker stands on, opened once per process: config, logger, metadata store,
// blob store, job queue, repositories and the authenticator. In the embedded default all four services
// and the worker share one Platform, because PGlite has a single owner.
import path from 'node:path';
import type { Config } from './env.ts';
import { createLogger, type Logger, type LoggerOptions } from './logging.ts';
import { openEmbeddedDatabase, type Database } from './db/database.ts';
import { DatasetsRepository } from './db/datasets-repository.ts';
import { ApiKeysRepository } from './db/api-keys-repository.ts';
import { JobsRepository } from './db/jobs-repository.ts';
import { ExportsRepository } from './db/exports-repository.ts';
import { EvaluationsRepository } from './db/evaluations-repository.ts';
import { JobSecrets } from './job-secrets.ts';
import type { BlobStore } from './blobs/blob-store.ts';
import { FolderBlobStore } from './blobs/folder-store.ts';
import { InProcessQueue, type JobQueue } from './queue.ts';
import { createAuthenticator, DEFAULT_USER, type Authenticate } from './auth.ts';
import { ServiceUnavailable } from './errors.ts';

export interface Platform {
  config: Config;
  logger: Logger;
  db: Database;
  blobs: BlobStore;
  queue: JobQueue;
  authenticate: Authenticate;
  datasets: DatasetsRepository;
  jobs: JobsRepository;
  exports: ExportsRepository;
  evaluations: EvaluationsRepository;
  jobSecrets: JobSecrets;
  apiKeys: ApiKeysRepository;
  close(): Promise<void>;
}

export interface OpenPlatformOptions {
  logger?: Logger;
  logDestination?: LoggerOptions['destination'];
}

export async function openPlatform(config: Config, options: OpenPlatformOptions = {}): Promise<Platform> {
  const logger = options.logger ?? createLogger({ level: config.LOG_LEVEL, destination: options.logDestination });
  const db = await openEmbeddedDatabase(path.join(config.dataDir, 'pglite')).catch((err: Error) => {
    throw new ServiceUnavailable('database', `the metadata store in ${config.dataDir} cannot be opened: ${err.message}`);
  });
  const blobs = await new FolderBlobStore(path.join(config.dataDir, 'blobs')).init();
  const queue = new InProcessQueue((name, err) => logger.error({ err, queue: name }, 'job handler failed'));
  const apiKeys = new ApiKeysRepository(db);
  const authenticate = await createAuthenticator(config, apiKeys);

  if (config.AUTH_MODE === 'token' && (await apiKeys.countLive()) === 0) {
    // First start in token mode: one key, shown once, so the operator is never locked out.
    const { key } = await apiKeys.create(DEFAULT_USER, 'first key');
    process.stderr.write(`\nAUTH_MODE=token and no API key existed; created one for user "${DEFAULT_USER}" (shown once):\n  ${key}\n\n`);
  }

  return {
    config,
    logger,
    db,
    blobs,
    queue,
    authenticate,
    datasets: new DatasetsRepository(db),
    jobs: new JobsRepository(db),
    exports: new ExportsRepository(db),
    evaluations: new EvaluationsRepository(db),
    jobSecrets: new JobSecrets(),
    apiKeys,
    async close() {
      await queue.close();
      await db.close();
    },
  };
}
