// Prometheus metrics of one process (prom-client): what its services answered, what its worker did, and, at each
// scrape, what the deployment holds (jobs by status, queue lanes, live workers) read from the stores. Names follow
// Prometheus' conventions (base units, _total counters, _seconds and _bytes); no label holds a user's data, an id, a
// prompt or a secret. The README lists every series in one line each.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Buckets of request and generation latencies, from a cached lookup to a long batch (seconds). */
const LATENCY_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180, 600];
/** Buckets of job phases, from a queue taken at once to a day's training (seconds). */
const PHASE_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 3 * 3600, 12 * 3600, 24 * 3600];

/** What the watchdog and reconciler repair (packages/jobs runtime/recovery.ts and reconciler.ts). */
export const REPAIRS = ['job_requeued', 'job_failed', 'job_paused', 'export_requeued', 'batch_requeued', 'dataset_requeued', 'evaluation_requeued', 'evaluation_failed', 'tinker_run_failed', 'sweep_requeued', 'entry_requeued', 'entry_removed', 'request_dropped'] as const;

let processRegistry: Registry | undefined;

/** process_* and nodejs_* (CPU, memory, event loop lag, GC), what any Node exporter shows: collected once per process
 *  (prom-client's collectors watch the event loop and the GC for good), however many platforms it opens. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export class Metrics {
  readonly registry = new Registry();

  readonly httpRequestDuration = new Histogram({
    name: 'ftp_http_request_duration_seconds',
    help: 'HTTP requests a service answered, by service, route template, method and status code',
    labelNames: ['service', 'route', 'method', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly jobPhaseDuration = new Histogram({
    name: 'ftp_job_phase_duration_seconds',
    help: 'Time training jobs spent in each phase (queued, preparing, training, saving), by trainer, observed as each phase ends',
    labelNames: ['phase', 'trainer'] as const,
    buckets: PHASE_BUCKETS,
    registers: [this.registry],
  });

  readonly jobsFinished = new Counter({
    name: 'ftp_jobs_finished_total',
    help: 'Training jobs this process ended, by final status and trainer',
    labelNames: ['status', 'trainer'] as const,
    registers: [this.registry],
  });

  readonly trainedTokens = new Counter({
    name: 'ftp_trained_tokens_total',
    help: 'Tokens the training jobs of this process trained on, by trainer (rate() of it is the tokens trained per second)',
    labelNames: ['trainer'] as const,
    registers: [this.registry],
  });

  readonly trainingTokensPerSecond = new Gauge({
    name: 'ftp_training_tokens_per_second',
    help: "The last completed training job's mean tokens per second on this worker, by trainer",
    labelNames: ['trainer'] as const,
    registers: [this.registry],
  });

  readonly generationDuration = new Histogram({
    name: 'ftp_generation_duration_seconds',
    help: 'Generation work a worker did (batch inference, evaluation, chat), by kind and engine, from taken to answered',
    labelNames: ['kind', 'engine'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly tinkerCallDuration = new Histogram({
    name: 'ftp_tinker_call_duration_seconds',
    help: 'Tinker calls a worker ran for the runs it holds, by operation and outcome (ok, user_error, server_error), from taken to answered',
    labelNames: ['op', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly tinkerCallWait = new Histogram({
    name: 'ftp_tinker_call_wait_seconds',
    help: 'Tinker calls from recorded to taken by the worker holding their run, by operation (the SDK sends the next call while one runs, so most wait for the one before)',
    labelNames: ['op'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly generatedTokens = new Counter({
    name: 'ftp_generated_tokens_total',
    help: 'Tokens generated, by kind (inference, evaluation, chat) and engine',
    labelNames: ['kind', 'engine'] as const,
    registers: [this.registry],
  });

  readonly cancelledTokens = new Histogram({
    name: 'ftp_cancelled_generation_tokens',
    help: 'Generations cancelled before their answer (the client went away, the time limit passed): the tokens each had decoded when its engine stopped, by engine',
    labelNames: ['engine'] as const,
    buckets: [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096],
    registers: [this.registry],
  });

  readonly timeToFirstToken = new Histogram({
    name: 'ftp_time_to_first_token_seconds',
    help: 'Streamed chats: time from the request taken to its first token, by engine',
    labelNames: ['engine'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly repairs = new Counter({
    name: 'ftp_reconciler_repairs_total',
    help: 'Rows the reconciler and watchdog repaired (a job requeued, failed or resumed), by repair',
    labelNames: ['repair'] as const,
    registers: [this.registry],
  });

  readonly retriedCalls = new Counter({
    name: 'ftp_retried_calls_total',
    help: 'Database and storage calls a worker retried because the server was down, by store',
    labelNames: ['store'] as const,
    registers: [this.registry],
  });

  readonly webhookAttempts = new Counter({
    name: 'ftp_webhook_attempts_total',
    help: 'Webhook delivery attempts this process made, by outcome (delivered; retried: failed, tried again later; failed: its last attempt failed)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  private readonly collectors: Array<() => Promise<void>> = [];
  private readonly texts: Array<() => Promise<string | null>> = [];
  /** Counts renders: what perScrape keys its one reading on. */
  private scrapes = 0;

  constructor() {
    // Counters of rare events start at 0 for every label value they can take, so that a dashboard or an alert sees
    // "none yet" rather than no series.
    for (const repair of REPAIRS) this.repairs.inc({ repair }, 0);
    for (const store of ['database', 'storage']) this.retriedCalls.inc({ store }, 0);
    for (const outcome of ['delivered', 'retried', 'failed']) this.webhookAttempts.inc({ outcome }, 0);
  }

  /** A gauge whose values are read at each scrape by `read` (it sets them; a failed read leaves the series out). */
  gaugeAtScrape<L extends string>(options: { name: string; help: string; labelNames: readonly L[] }, read: (gauge: Gauge<L>) => Promise<void>): Gauge<L> {
    const gauge = new Gauge<L>({ ...options, registers: [this.registry] });
    this.collectors.push(async () => {
      gauge.reset();
      await read(gauge);
    });
    return gauge;
  }

  /** `read`, called at most once per scrape however many gauges of that scrape ask for it (one nvidia-smi call, one
   *  reading of the queue lanes for the gauges made from them). */
  perScrape<T>(read: () => Promise<T>): () => Promise<T> {
    let last: { scrape: number; value: Promise<T> } | undefined;
    return () => {
      if (last?.scrape !== this.scrapes) last = { scrape: this.scrapes, value: read() };
      return last.value;
    };
  }

  /** Prometheus text another library exports (BullMQ's queue counts), read at each scrape and served after ours. */
  textAtScrape(read: () => Promise<string | null>): void {
    this.texts.push(read);
  }

  /** The Prometheus text of every series, the gauges read now. A gauge whose store is down is left out, never 0. */
  async render(): Promise<string> {
    this.scrapes += 1;
    await Promise.all(this.collectors.map((collect) => collect().catch(() => undefined)));
    const others = await Promise.all(this.texts.map((read) => read().catch(() => null)));
    const ours = await Registry.merge([processMetrics(), this.registry]).metrics();
    return [ours, ...others.filter((text): text is string => !!text)].map((text) => text.trimEnd()).join('\n') + '\n';
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
