// Configuration, parsed once at start from the environment. A wrong setting stops the process with a
// message naming the variable and what it accepts, instead of failing deep inside a request later.
import path from 'node:path';
import { z } from 'zod';
import { DEFAULT_MAX_BATCH, DEFAULT_MAX_EVAL_SAMPLES } from '@ftp/schema';

const boolFromEnv = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const port = z.coerce.number().int().min(1).max(65535);
const positiveInt = z.coerce.number().int().positive();

/** The lanes a worker may serve (WORKER_QUEUES), each a queue of its own (@ftp/jobs/queues); all by default. */
export const WORKER_LANES = ['train', 'export', 'infer', 'evaluate', 'preflight', 'augment', 'batch', 'benchmark', 'session', 'sweep'] as const;
export type WorkerLane = (typeof WORKER_LANES)[number];

const EnvSchema = z
  .object({
    DATA_DIR: z.string().min(1).default('./data').describe('folder for the embedded database and blobs'),
    HOST: z.string().min(1).default('127.0.0.1'),
    PREPROCESSING_PORT: port.default(8001),
    TRAINING_PORT: port.default(8002),
    EXPORT_PORT: port.default(8003),
    INFERENCE_PORT: port.default(8004),
    OPENAI_PORT: port.default(8000).describe('the OpenAI-compatible /v1 surface'),
    TINKER_PORT: port.default(8005).describe('the Tinker-compatible API (/api/v1, for the tinker SDK)'),
    CONSOLE_PORT: port.default(8080).describe('the web console'),
    // Where the console forwards /api/<service>/…; unset: that service's port on this host (the embedded default).
    CONSOLE_PREPROCESSING_URL: z.url().optional(),
    CONSOLE_TRAINING_URL: z.url().optional(),
    CONSOLE_EXPORT_URL: z.url().optional(),
    CONSOLE_INFERENCE_URL: z.url().optional(),
    CONSOLE_OPENAI_URL: z.url().optional(),
    CONSOLE_TINKER_URL: z.url().optional(),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto').describe('auto: readable lines (pino-pretty) on a terminal, JSON otherwise'),
    AUTH_MODE: z.enum(['none', 'token', 'jwt']).default('none'),
    JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
    JWT_PUBLIC_KEY: z.string().min(1).optional(),
    JWT_ISSUER: z.string().min(1).optional(),
    JWT_AUDIENCE: z.string().min(1).optional(),
    METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional().describe("the operator's bearer token for /metrics in token and jwt modes (off while unset); with AUTH_MODE none, /metrics is public unless it is set"),
    MAX_UPLOAD_BYTES: positiveInt.default(1024 ** 3),
    HF_ENDPOINT: z.url().default('https://huggingface.co'),
    HF_TOKEN: z.string().min(1).optional(),
    HUB_TIMEOUT_MS: positiveInt.default(15_000),
    MAX_BATCH: positiveInt.default(DEFAULT_MAX_BATCH),
    MAX_EVAL_SAMPLES: positiveInt.default(DEFAULT_MAX_EVAL_SAMPLES),
    INFERENCE_TIMEOUT_MS: positiveInt.default(600_000).describe('time limit of one batch inference or evaluation request (504 past it)'),
    PREFLIGHT_TIMEOUT_MS: positiveInt.default(300_000).describe('time limit of a training dry run (POST /train with dry_run; 504 past it)'),
    SUBMIT_CHECK_MS: z.coerce.number().int().min(0).default(10_000)
      .describe("how long a submit waits for a worker's count of the job's data (a job whose rows all train nothing is then refused with 422); past it, or 0, the job is queued and its own pre-flight checks it"),
    INFERENCE_MEMORY_BYTES: positiveInt.default(4 * 1024 ** 3).describe('model weights each inference engine keeps loaded between requests'),
    PROGRESS_INTERVAL_S: z.coerce.number().positive().max(60).default(5).describe('how often a worker says what a long stage (a model build, an export) does while it runs'),
    PREPARE_GGUF_AFTER_TRAINING: boolFromEnv
      .default(true)
      .describe('after a job completes, the worker that ran it (when it serves the infer queue) converts its model to GGUF for the fast engine in the background, so the first chat does not wait for it'),
    FAST_ENGINE_QUANTIZATION: z
      .enum(['f16', 'bf16', 'q8_0', 'q4_k_m'])
      .default('f16')
      .describe('GGUF type the fast engine runs: f16 gives transformers’ greedy text, q8_0 is faster'),
    FAST_ENGINE_THREADS: positiveInt.optional().describe('CPU threads per llama.cpp context (default one per core); 1 suits tiny models on a busy machine'),
    FAST_ENGINE_SEQUENCES: positiveInt.default(16).describe('conversations of one model and adapter the fast engine decodes at once, whichever requests they come from (others wait for a free one); fewer when their KV caches would not fit'),
    FAST_ENGINE_SEQUENCES_PER_CONTEXT: positiveInt.optional().describe('of those, how many share one llama.cpp context (decoded together): default all on a GPU, 1 on a CPU, where batched decoding measured slower than contexts side by side'),
    LLM_API_BASE: z.url().optional().describe('OpenAI-compatible API root (…/v1) the LLM augmentation methods call, and score_model graders whose judge is not one of this stack’s models'),
    LLM_MODEL: z.string().min(1).optional().describe('the model LLM augmentation asks at LLM_API_BASE'),
    LLM_CONCURRENCY: positiveInt.default(4).describe('requests to LLM_API_BASE one dataset has in flight at once'),
    LLM_MAX_RETRIES: z.coerce.number().int().min(0).default(4).describe('retries of one LLM request on 429, 5xx and lost connections (backoff 0.5 s doubling to 8 s)'),
    LLM_TIMEOUT_MS: positiveInt.default(120_000).describe('time limit of one LLM request'),
    AUGMENT_TIMEOUT_S: positiveInt.default(3600).describe('time limit of one dataset’s LLM augmentation; past it the dataset fails'),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
      .optional()
      .describe('PostgreSQL for the metadata store (scaled out); unset: PGlite in DATA_DIR'),
    DATABASE_POOL_SIZE: positiveInt.default(10).describe('connections each process keeps to PostgreSQL'),
    S3_BUCKET: z.string().min(3).max(63).optional().describe('S3-compatible bucket for blobs (scaled out); unset: DATA_DIR/blobs'),
    S3_ENDPOINT: z.url().optional().describe('S3 API endpoint (SeaweedFS, MinIO, …); unset: AWS for S3_REGION'),
    S3_REGION: z.string().min(1).default('us-east-1'),
    S3_ACCESS_KEY_ID: z.string().min(1).optional().describe('unset: the AWS SDK default chain (AWS_ACCESS_KEY_ID, instance role, …)'),
    S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
    S3_FORCE_PATH_STYLE: boolFromEnv.default(true).describe('bucket in the path, not the host name (what most S3-compatible servers need)'),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
      .optional()
      .describe('Redis for the job queue (BullMQ, scaled out); unset: the in-process queue'),
    REDIS_PREFIX: z.string().min(1).default('ftp').describe('prefix of every key the queue keeps in Redis'),
    SECRETS_KEY: z.string().min(1).optional().describe('32 random bytes, base64: seals hub_token and api keys at rest; required with DATABASE_URL'),
    SECRET_TTL_S: positiveInt.default(7 * 24 * 3600).describe('how long a sealed secret of a job that never ends is kept'),
    WORKER_TIMEOUT_S: positiveInt.default(60).describe('a worker silent this long is gone: its jobs fail, or resume elsewhere'),
    OUTAGE_RETRY_S: positiveInt.default(600).describe('how long a worker retries a database or storage call that fails because the server is down (backoff, a log line each); past it the work fails with the reason'),
    WORKER_STOP_GRACE_S: positiveInt.default(60).describe('on SIGTERM, how long a worker gives its training jobs to checkpoint and store it before it exits'),
    WORKER_QUEUES: z
      .string()
      .regex(new RegExp(`^\\s*(${WORKER_LANES.join('|')})(\\s*,\\s*(${WORKER_LANES.join('|')}))*\\s*$`), `must be a comma-separated list of ${WORKER_LANES.join(', ')}`)
      .default(WORKER_LANES.join(','))
      .transform((v) => [...new Set(v.split(',').map((q) => q.trim()))] as WorkerLane[])
      .describe('the queues a worker serves'),
    WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464).describe("a scaled-out worker's own /metrics port (0: none); the embedded stack's services carry its worker's metrics"),
    TINKER_IDLE_S: positiveInt.default(600).describe('a Tinker training run with no call for this long saves its state and lets its worker go (its next call queues it again, to continue from there)'),
    TINKER_SEQ_GAP_S: positiveInt.default(300).describe("how long a Tinker training run's later calls wait for a seq_id that never arrived (the SDK retries a submission for 300 s) before the run skips it; the skipped call, sent after all, fails with category user"),
    WORKER_CONCURRENCY: positiveInt.default(1).describe('training jobs one worker runs at once'),
    TRAIN_PROCESSES: positiveInt.optional().describe('processes one training job runs on (torchrun, DDP); unset: one per CUDA device, 1 without'),
    TRAIN_SHARDING: z
      .enum(['auto', 'ddp', 'fsdp'])
      .default('auto')
      .describe('Full jobs on several processes: auto shards weights, gradients and optimizer state (FSDP) when pre-flight says the model does not fit one process; ddp never; fsdp always'),
    LM_EVAL_TASK_DIRS: z
      .string()
      .default('')
      .transform((v) => v.split(',').map((d) => d.trim()).filter((d) => d !== '').map((d) => path.resolve(d)))
      .describe("comma-separated folders of lm-eval task YAMLs on a worker (lm-eval's include_path): the deployment's own tasks, which POST /evaluations names in benchmarks.tasks beside lm-eval's and the core's (everyday_facts)"),
    START_WORKER: boolFromEnv.default(true).describe('run a worker in the embedded process'),
    CORE_PYTHON: z.string().min(1).optional().describe('python of the ML core (default core/.venv/bin/python)'),
    MODELS_DIR: z.string().min(1).optional().describe('local model store (default DATA_DIR/models)'),
    MLFLOW_TRACKING_URI: z.url().optional().describe('MLflow server: the default experiment tracker when set'),
    WEBHOOK_URL: z.url().optional().describe("the operator's webhook endpoint: every user's events go there too, signed with WEBHOOK_SECRET"),
    WEBHOOK_SECRET: z
      .string()
      .regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/, 'must be whsec_ and base64 (a Standard Webhooks secret: whsec_$(openssl rand -base64 32))')
      .optional()
      .describe('the signing secret of WEBHOOK_URL'),
    WEBHOOK_ALLOW_PRIVATE: boolFromEnv
      .default(false)
      .describe('let webhook endpoints be private, loopback or link-local addresses and plain http (refused otherwise, checked on the resolved address at every attempt)'),
    WEBHOOK_BACKOFF_S: z
      .string()
      .regex(/^\s*\d+(\.\d+)?(\s*,\s*\d+(\.\d+)?)*\s*$/, 'must be a comma-separated list of seconds')
      .default('5,300,1800,7200,18000,36000,36000')
      .transform((v) => v.split(',').map(Number))
      .describe('the waits between the attempts of a webhook delivery, in seconds (the default, Standard Webhooks’ schedule, retries for 27.6 h); after the last, it failed'),
  })
  .superRefine((env, ctx) => {
    if (env.AUTH_MODE === 'jwt' && !env.JWT_SECRET && !env.JWT_PUBLIC_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['JWT_SECRET'],
        message: 'AUTH_MODE=jwt needs JWT_SECRET (HS256) or JWT_PUBLIC_KEY (RS256, PEM)',
      });
    }
    // Every process of a deployment must open the secrets the others sealed: the key cannot be generated here.
    if (env.DATABASE_URL && !env.SECRETS_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['SECRETS_KEY'],
        message: 'is required with DATABASE_URL: every process must share it (make one with: openssl rand -base64 32)',
      });
    }
    if ((env.WEBHOOK_URL === undefined) !== (env.WEBHOOK_SECRET === undefined)) {
      ctx.addIssue({ code: 'custom', path: [env.WEBHOOK_URL === undefined ? 'WEBHOOK_URL' : 'WEBHOOK_SECRET'], message: 'WEBHOOK_URL and WEBHOOK_SECRET go together' });
    }
    if (env.S3_ACCESS_KEY_ID !== undefined && env.S3_SECRET_ACCESS_KEY === undefined) {
      ctx.addIssue({ code: 'custom', path: ['S3_SECRET_ACCESS_KEY'], message: 'is required with S3_ACCESS_KEY_ID' });
    }
  });

/** Every variable the services read, with its description: the compose file and README are checked against it. */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(EnvSchema.shape);

export type Config = z.infer<typeof EnvSchema> & {
  /** Absolute DATA_DIR. */
  dataDir: string;
  /** Absolute local model store: MODELS_DIR, or DATA_DIR/models. */
  modelsDir: string;
};

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment (process.env by default). Empty strings count as unset. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const known = Object.keys(EnvSchema.shape);
  const input = Object.fromEntries(
    known.filter((k) => env[k] !== undefined && env[k] !== '').map((k) => [k, env[k]]),
  );
  const parsed = EnvSchema.safeParse(input);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = String(issue.path[0] ?? 'environment');
        const got = input[name] === undefined ? '' : ` (got ${JSON.stringify(redactIfSecret(name, input[name]))})`;
        return `${name}: ${issue.message}${got}`;
      }),
    );
  }
  const dataDir = path.resolve(parsed.data.DATA_DIR);
  return { ...parsed.data, dataDir, modelsDir: path.resolve(parsed.data.MODELS_DIR ?? path.join(dataDir, 'models')) };
}

function redactIfSecret(name: string, value: unknown): unknown {
  if (/TOKEN|SECRET|KEY/.test(name)) return '[redacted]';
  // DATABASE_URL, REDIS_URL: a password in the URL stays out of the message.
  return typeof value === 'string' ? value.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:[redacted]@') : value;
}
