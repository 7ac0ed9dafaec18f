// A place of its own on the shared test servers, for one test file or one stack: a fresh PostgreSQL database,
// a fresh bucket name (the S3 driver creates it on first open) and a fresh Redis key prefix. Returns them as
// the environment the platform reads, so a test opens the scaled-out drivers exactly as a deployment does.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestServers } from './global-setup.ts';

const SECRETS_KEY = randomBytes(32).toString('base64');

export async function createDatabase(adminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** DATABASE_URL, S3_*, REDIS_URL, REDIS_PREFIX and SECRETS_KEY for a new, empty scaled-out deployment on
 *  `servers` (in a test file: inject('servers')). */
export async function scaledOutEnv(servers: TestServers, label = 'test'): Promise<Record<string, string>> {
  const id = `${label.toLowerCase().replace(/[^a-z0-9]+/g, '-').slice(0, 20)}-${randomBytes(4).toString('hex')}`;
  return {
    DATABASE_URL: await createDatabase(servers.postgresUrl, `ftp_${id.replace(/-/g, '_')}`),
    S3_BUCKET: `ftp-${id}`,
    S3_ENDPOINT: servers.s3.endpoint,
    S3_REGION: servers.s3.region,
    S3_ACCESS_KEY_ID: servers.s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: servers.s3.secretAccessKey,
    REDIS_URL: servers.redisUrl,
    REDIS_PREFIX: `ftp-${id}`,
    SECRETS_KEY,
    // A worker's own /metrics: off unless a test gives each worker a port of its own (scaled-out.test.ts does).
    WORKER_METRICS_PORT: '0',
  };
}
