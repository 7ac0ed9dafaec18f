// What a deployment holds, read from its stores at each scrape of a service's /metrics: training jobs by status and
// trainer, each queue lane's entries (BullMQ's own exporter scaled out; the in-process queue's counts under the same
// name) and its oldest waiting entry's age, the live workers with their devices, and the webhook deliveries pending. Every service
// process reports the same numbers (query them with max by (…)); workers leave them to the services.
import type { Platform, QueueDefinition, TrainingJobRow, WorkerRow } from '@ftp/platform';
import { QUEUES } from '../queues/index.ts';

const LANES: Array<QueueDefinition<unknown, unknown>> = Object.values(QUEUES);
const PAST_ESTIMATE_FACTOR = 3;
const PAST_ESTIMATE_MARGIN_S = 600;

/** Whether a running job has taken far longer than its pre-flight said (its worker's estimate, else the first). */
function pastEstimate(job: TrainingJobRow, now: number): boolean {
  const estimates = ((job.preflight as { estimates?: Array<{ worker_id: string; wall_seconds: number | null }> } | null)?.estimates) ?? [];
  const wall = (estimates.find((e) => e.worker_id === job.worker_id) ?? estimates[0])?.wall_seconds;
  if (wall === undefined || wall === null || !job.started_at) return false;
  return (now - job.started_at.getTime()) / 1000 > PAST_ESTIMATE_FACTOR * wall + PAST_ESTIMATE_MARGIN_S;
}

export function registerDeploymentMetrics(platform: Platform): void {
  const { metrics, jobs, queue, workers, config } = platform;
  metrics.gaugeAtScrape({ name: 'ftp_jobs', help: 'Training jobs in the store, by status and trainer', labelNames: ['status', 'trainer'] }, async (gauge) => {
    for (const row of await jobs.countByStatus()) gauge.set({ status: row.status, trainer: row.trainer }, row.count);
  });
  metrics.gaugeAtScrape({ name: 'ftp_jobs_past_estimate', help: `Running training jobs past ${PAST_ESTIMATE_FACTOR}x their pre-flight wall-time estimate and ${PAST_ESTIMATE_MARGIN_S} s more, by status`, labelNames: ['status'] }, async (gauge) => {
    const now = Date.now();
    const running = await jobs.listByStatus(['preparing', 'training']);
    for (const status of ['preparing', 'training'] as const) {
      gauge.set({ status }, running.filter((job) => job.status === status && pastEstimate(job, now)).length);
    }
  });
  // one reading of the live workers and the lanes per scrape serves the gauges made from them
  const reading = metrics.perScrape(async () => {
    const live = await workers.live(config.WORKER_TIMEOUT_S);
    return { live, lanes: await laneStates(platform, live) };
  });
  const lanes = async () => (await reading()).lanes;
  if (queue.durable) {
    // BullMQ's own exporter, scaled out (bullmq_job_count by state, bullmq_job_completed_total, bullmq_job_failed_total)
    metrics.textAtScrape(() => queue.prometheusText(LANES.map((lane) => lane.name)));
  } else {
    // the in-process queue's entries under BullMQ's exporter's name and words
    metrics.gaugeAtScrape({ name: 'bullmq_job_count', help: 'Number of jobs in the queue by state', labelNames: ['queue', 'state'] }, async (gauge) => {
      for (const lane of await lanes()) for (const [state, count] of Object.entries(lane.counts)) gauge.set({ queue: lane.name, state }, count);
    });
  }
  metrics.gaugeAtScrape({ name: 'ftp_queue_oldest_waiting_seconds', help: "Age of each lane's oldest entry no worker has taken yet (0 when none waits)", labelNames: ['queue'] }, async (gauge) => {
    for (const lane of await lanes()) gauge.set({ queue: lane.name }, lane.oldestWaitingSeconds);
  });
  metrics.gaugeAtScrape({ name: 'ftp_workers_alive', help: 'Workers whose heartbeat is recent (WORKER_TIMEOUT_S), by queue lane they serve', labelNames: ['queue'] }, async (gauge) => {
    for (const lane of await lanes()) gauge.set({ queue: lane.name }, lane.workers);
  });
  const webhooks = metrics.perScrape(() => platform.webhooks.pendingSummary());
  metrics.gaugeAtScrape({ name: 'ftp_webhook_deliveries_pending', help: 'Webhook deliveries not yet delivered nor given up (each event once per endpoint)', labelNames: [] }, async (gauge) => {
    gauge.set((await webhooks()).count);
  });
  metrics.gaugeAtScrape({ name: 'ftp_webhook_oldest_pending_seconds', help: 'Age of the oldest webhook delivery still pending (0 when none)', labelNames: [] }, async (gauge) => {
    gauge.set((await webhooks()).oldestSeconds);
  });
  metrics.gaugeAtScrape({ name: 'ftp_worker_devices', help: 'Devices of the live workers, by kind (cuda: each GPU; cpu: each machine)', labelNames: ['kind'] }, async (gauge) => {
    const { live } = await reading();
    for (const kind of ['cuda', 'cpu'] as const) gauge.set({ kind }, live.flatMap((worker) => worker.devices).filter((device) => device.kind === kind).length);
  });
}

/** One queue lane now: its entries by state (the driver's counts), its oldest waiting entry's age, its live workers. */
export interface LaneState {
  name: string;
  counts: Record<string, number>;
  oldestWaitingSeconds: number;
  workers: number;
}

/** Every lane's state, as the metrics and GET /workers report it; `live`: the live workers, read by the caller. */
export async function laneStates(platform: Platform, live: readonly WorkerRow[]): Promise<LaneState[]> {
  const { queue } = platform;
  const now = Date.now();
  return Promise.all(LANES.map(async (lane) => {
    const [counts, pending] = await Promise.all([queue.jobCounts(lane.name), queue.pending(lane)]);
    const oldest = pending.find((entry) => entry.state === 'waiting');
    return {
      name: lane.name,
      counts,
      oldestWaitingSeconds: oldest ? (now - oldest.queuedAt.getTime()) / 1000 : 0,
      workers: live.filter((worker) => worker.queues.includes(lane.name)).length,
    };
  }));
}
