// Everything a service or worker stands on, opened once per process: config, logger, metadata store, blob
// store, job queue, sealed secrets, repositories and the authenticator. Each store has two drivers chosen by
// the environment (DATABASE_URL → PostgreSQL, S3_BUCKET → S3, REDIS_URL → BullMQ; unset → the embedded
// default: PGlite and a folder in DATA_DIR, an in-process queue), and nothing above this file can tell which.
import path from 'node:path';
import type { Config } from './env.ts';
import { createLogger, type Logger, type LoggerOptions } from './logging.ts';
import { openEmbeddedDatabase, type Database } from './db/database.ts';
import { openPostgresDatabase } from './db/postgres.ts';
import { DatasetsRepository } from './db/datasets-repository.ts';
import { ApiKeysRepository } from './db/api-keys-repository.ts';
import { JobsRepository } from './db/jobs-repository.ts';
import { ExportsRepository } from './db/exports-repository.ts';
import { EvaluationsRepository } from './db/evaluations-repository.ts';
import { EvaluationRunsRepository } from './db/evaluation-runs-repository.ts';
import { ComparisonsRepository } from './db/comparisons-repository.ts';
import { TinkerRepository } from './db/tinker-repository.ts';
import { SweepsRepository } from './db/sweeps-repository.ts';
import { WorkersRepository } from './db/workers-repository.ts';
import { UploadsRepository } from './db/uploads-repository.ts';
import { BatchesRepository } from './db/batches-repository.ts';
import { WebhooksRepository } from './db/webhooks-repository.ts';
import { loadSecretsKey, SealedSecrets } from './secrets.ts';
import type { BlobStore } from './blobs/blob-store.ts';
import { FolderBlobStore } from './blobs/folder-store.ts';
import { S3BlobStore } from './blobs/s3-store.ts';
import { InProcessQueue, type JobQueue } from './queue.ts';
import { BullMqQueue } from './queue-bullmq.ts';
import { createAuthenticator, DEFAULT_USER, type Authenticate } from './auth.ts';
import { ServiceUnavailable } from './errors.ts';
import { OutageRetry, retryingBlobStore, retryingDatabase } from './outages.ts';
import { Metrics } from './metrics.ts';

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
  /** Evaluations with benchmarks (POST /evaluations), run by workers. */
  evaluationRuns: EvaluationRunsRepository;
  /** Pairwise comparisons (POST /comparisons), written when done. */
  comparisons: ComparisonsRepository;
  /** The Tinker-compatible API's sessions, runs, samplers, calls and checkpoints. */
  tinker: TinkerRepository;
  /** Sweeps (POST /sweeps) and their trials, held by workers. */
  sweeps: SweepsRepository;
  workers: WorkersRepository;
  uploads: UploadsRepository;
  batches: BatchesRepository;
  webhooks: WebhooksRepository;
  secrets: SealedSecrets;
  apiKeys: ApiKeysRepository;
  /** This process's Prometheus metrics (every service and worker on the platform feeds the same registry). */
  metrics: Metrics;
  /** Set on a platform made by withOutageRetries: its retries, and the outages they lived through. */
  outages?: OutageRetry;
  close(): Promise<void>;
}

export interface OpenPlatformOptions {
  logger?: Logger;
  logDestination?: LoggerOptions['destination'];
}

/** Which driver each store uses, for logs and the health body. */
export function driverNames(config: Config): { db: string; blobs: string; queue: string } {
  return {
    db: config.DATABASE_URL ? 'postgres' : 'pglite',
    blobs: config.S3_BUCKET ? 's3' : 'folder',
    queue: config.REDIS_URL ? 'bullmq' : 'in-process',
  };
}

export async function openDatabase(config: Config): Promise<Database> {
  const where = config.DATABASE_URL ? 'the PostgreSQL server at DATABASE_URL' : `the metadata store in ${config.dataDir}`;
  try {
    return config.DATABASE_URL
      ? await openPostgresDatabase(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE })
      : await openEmbeddedDatabase(path.join(config.dataDir, 'pglite'));
  } catch (err) {
    // the cause stays readable: a command that holds the folder briefly (pnpm keys) says what to do about an owner
    throw Object.assign(new ServiceUnavailable('database', `${where} cannot be opened: ${(err as Error).message}`), { cause: err });
  }
}

export async function openBlobStore(config: Config): Promise<BlobStore> {
  if (!config.S3_BUCKET) return new FolderBlobStore(path.join(config.dataDir, 'blobs')).init();
  const store = new S3BlobStore({
    bucket: config.S3_BUCKET,
    region: config.S3_REGION,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}),
    ...(config.S3_ACCESS_KEY_ID && config.S3_SECRET_ACCESS_KEY
      ? { credentials: { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY } }
      : {}),
  });
  return store.init().catch((err: Error) => {
    const where = config.S3_ENDPOINT ? new URL(config.S3_ENDPOINT).host : `AWS ${config.S3_REGION}`; // host only: no credentials in a URL
    throw new ServiceUnavailable('storage', `the bucket ${config.S3_BUCKET} at ${where} cannot be used: ${err.message}`);
  });
}

function openQueue(config: Config, logger: Logger): JobQueue {
  const onHandlerError = (queue: string, err: unknown) => logger.error({ err, queue }, 'job handler failed');
  if (!config.REDIS_URL) return new InProcessQueue(onHandlerError);
  return new BullMqQueue({
    url: config.REDIS_URL, prefix: config.REDIS_PREFIX, onHandlerError,
    onLockLost: (queue, work, what) =>
      logger.warn({ queue, work: work.id, ...work.ids, what }, `the queue lost its entry for this ${queue} work (Redis restarted without its data, or was out of reach longer than a lock lasts); the work went on, and its row says how it ended`),
    onReconnecting: (attempt, reason) => logger.warn({ attempt, reason }, 'queue unreachable, retrying: commands wait until Redis answers'),
    onReconnected: () => logger.info('queue reachable again; the commands that waited were sent'),
    onConnectionLost: (queue, reason) => logger.warn({ queue, reason }, `the ${queue} lane lost its connection to Redis (${reason}); it connects again and its work goes on`),
  });
}

function repositories(db: Database, config: Config) {
  // The repositories whose state changes are told to webhooks record their events through it, in their transactions.
  const webhooks = new WebhooksRepository(db, config.WEBHOOK_URL !== undefined);
  return {
    datasets: new DatasetsRepository(db),
    jobs: new JobsRepository(db, webhooks),
    exports: new ExportsRepository(db, webhooks),
    evaluations: new EvaluationsRepository(db, webhooks),
    evaluationRuns: new EvaluationRunsRepository(db, webhooks),
    comparisons: new ComparisonsRepository(db),
    tinker: new TinkerRepository(db, !config.DATABASE_URL),
    sweeps: new SweepsRepository(db),
    workers: new WorkersRepository(db),
    uploads: new UploadsRepository(db),
    batches: new BatchesRepository(db, webhooks),
    webhooks,
  };
}

/** The same platform (same connections, queue and logger) whose database and blob store wait out a server's outage
 *  for OUTAGE_RETRY_S (outages.ts): what a worker's processors run on. Closing it closes nothing: `platform` owns. */
export function withOutageRetries(platform: Platform): Platform {
  const retry = new OutageRetry(platform.config.OUTAGE_RETRY_S * 1000, platform.logger, (store) => platform.metrics.retriedCalls.inc({ store }));
  const db = retryingDatabase(platform.db, retry);
  return {
    ...platform,
    db,
    blobs: retryingBlobStore(platform.blobs, retry),
    ...repositories(db, platform.config),
    secrets: platform.secrets.withDatabase(db),
    outages: retry,
    async close() {},
  };
}

export async function openPlatform(config: Config, options: OpenPlatformOptions = {}): Promise<Platform> {
  const logger = options.logger ?? createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT, destination: options.logDestination });
  const db = await openDatabase(config);
  let blobs: BlobStore;
  let secretsKey: Buffer;
  try {
    blobs = await openBlobStore(config);
    secretsKey = await loadSecretsKey(config);
  } catch (err) {
    await db.close();
    throw err;
  }
  const queue = openQueue(config, logger);
  const apiKeys = new ApiKeysRepository(db);
  const authenticate = await createAuthenticator(config, apiKeys);

  if (config.AUTH_MODE === 'token' && (await apiKeys.countLive()) === 0) {
    // First start in token mode: one key, shown once, so the operator is never locked out.
    const first = await apiKeys.createFirst(DEFAULT_USER, 'first key');
    if (first) process.stderr.write(`\nAUTH_MODE=token and no API key existed; created one for user "${DEFAULT_USER}" (shown once):\n  ${first.key}\n\n`);
  }
  logger.debug({ drivers: driverNames(config) }, 'platform open');

  return {
    config,
    logger,
    db,
    blobs,
    queue,
    authenticate,
    ...repositories(db, config),
    secrets: new SealedSecrets(db, secretsKey, config.SECRET_TTL_S),
    apiKeys,
    metrics: new Metrics(),
    async close() {
      await queue.close();
      await db.close();
    },
  };
}
