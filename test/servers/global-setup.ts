// vitest globalSetup: PostgreSQL, Redis and SeaweedFS started once for the whole run (not per test file) and
// stopped at its end. Test files read the addresses with inject('servers') and make their own database,
// key prefix or bucket, so they never see one another's data.
import type { TestProject } from 'vitest/node';
import { startPostgres, startRedis, startSeaweedFs, type RunningServer } from './servers.ts';

export interface TestServers {
  /** Admin URL of the PostgreSQL server (database `postgres`); createDatabase() makes one per test file. */
  postgresUrl: string;
  redisUrl: string;
  s3: { endpoint: string; region: string; accessKeyId: string; secretAccessKey: string };
}

declare module 'vitest' {
  export interface ProvidedContext {
    servers: TestServers;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started: RunningServer[] = [];
  const track = <T extends RunningServer>(server: T): T => {
    started.push(server);
    return server;
  };
  const stopAll = async () => {
    await Promise.allSettled(started.map((s) => s.stop()));
  };
  try {
    const [postgres, redis, s3] = await Promise.all([
      startPostgres().then(track),
      startRedis().then(track),
      startSeaweedFs().then(track),
    ]);
    project.provide('servers', {
      postgresUrl: postgres.url,
      redisUrl: redis.url,
      s3: { endpoint: s3.url, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
  } catch (err) {
    await stopAll();
    throw err;
  }
  return stopAll;
}
