// Configuration is parsed once; a wrong setting stops the start with a message naming it.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@ftp/platform';

describe('loadConfig', () => {
  it('gives the embedded defaults', () => {
    const config = loadConfig({});
    expect(config.AUTH_MODE).toBe('none');
    expect(config.PREPROCESSING_PORT).toBe(8001);
    expect(config.INFERENCE_PORT).toBe(8004);
    expect(config.MAX_UPLOAD_BYTES).toBe(1024 ** 3);
    expect(config.dataDir.endsWith('/data')).toBe(true);
    expect(config.TRAIN_SHARDING).toBe('auto');
  });

  it('treats empty strings as unset and coerces numbers and booleans', () => {
    const config = loadConfig({ AUTH_MODE: '', MAX_UPLOAD_BYTES: '2048', START_WORKER: 'false' });
    expect(config.AUTH_MODE).toBe('none');
    expect(config.MAX_UPLOAD_BYTES).toBe(2048);
    expect(config.START_WORKER).toBe(false);
  });

  it.each([
    [{ AUTH_MODE: 'tokn' }, /AUTH_MODE: .*"tokn"/],
    [{ PREPROCESSING_PORT: '99999' }, /PREPROCESSING_PORT/],
    [{ MAX_UPLOAD_BYTES: 'lots' }, /MAX_UPLOAD_BYTES/],
    [{ AUTH_MODE: 'jwt' }, /JWT_SECRET: AUTH_MODE=jwt needs JWT_SECRET/],
    [{ HF_ENDPOINT: 'not a url' }, /HF_ENDPOINT/],
    [{ START_WORKER: 'maybe' }, /START_WORKER/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL/],
    [{ DATABASE_URL: 'postgres://x' }, /SECRETS_KEY: is required with DATABASE_URL/],
    [{ REDIS_URL: 'localhost:6379' }, /REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL/],
    [{ WORKER_QUEUES: 'train,gpu' }, /WORKER_QUEUES: must be a comma-separated list of train, export, infer, evaluate/],
    [{ TRAIN_SHARDING: 'zero3' }, /TRAIN_SHARDING: .*"auto".*"ddp".*"fsdp"/],
    [{ S3_BUCKET: 'b', S3_ACCESS_KEY_ID: 'k' }, /S3_SECRET_ACCESS_KEY: is required with S3_ACCESS_KEY_ID/],
  ])('rejects %j naming the setting', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('never echoes a secret setting in the error', () => {
    expect(() => loadConfig({ AUTH_MODE: 'jwt', JWT_SECRET: 'short-secret-value' })).toThrow(/\[redacted\]/);
    expect(() => loadConfig({ AUTH_MODE: 'jwt', JWT_SECRET: 'short-secret-value' })).not.toThrow(/short-secret-value/);
    // A password inside a connection URL neither.
    expect(() => loadConfig({ DATABASE_URL: 'mysql://ftp:hunter2@db/ftp' })).toThrow(/mysql:\/\/ftp:\[redacted\]@db\/ftp/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://ftp:hunter2@db/ftp' })).not.toThrow(/hunter2/);
  });

  it('scaled out: the drivers are chosen by their variables, WORKER_QUEUES is a list', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://db/ftp', SECRETS_KEY: Buffer.alloc(32).toString('base64'), REDIS_URL: 'redis://r:6379', S3_BUCKET: 'ftp', WORKER_QUEUES: ' infer , evaluate,infer' });
    expect(config.WORKER_QUEUES).toEqual(['infer', 'evaluate']);
    expect(loadConfig({}).WORKER_QUEUES).toEqual(['train', 'export', 'infer', 'evaluate', 'preflight', 'augment', 'batch', 'benchmark', 'session', 'sweep']);
    expect(config.WORKER_TIMEOUT_S).toBe(60);
  });
});
