// The pre-flight report's last part, which only the fleet knows: for each live training worker, the wall time from
// the speed measured on its host and device (training_tokens / tokens per second) plus what the last real job there
// spent around its steps (loading, preparing, evaluating, saving), then what preparing its model for chat took after
// completed (on a worker that serves chat), and whether the estimated peak
// memory fits its GPU (or RAM); and the warnings that follow. The core measures the rest (tokens, steps, memory).
import type { DeviceInfo, Platform, ThroughputKey, ThroughputRow, WorkerRow } from '@ftp/platform';
import type { PreflightReport } from '@ftp/schema';

/** The report as the core writes it: everything but the fleet's part. */
export type CoreReport = Omit<PreflightReport, 'estimates'> & { estimates?: PreflightReport['estimates'] };

/** The device a worker trains on (its first GPU, else the CPU), named as throughput rows name it. */
export function trainingDevice(devices: readonly DeviceInfo[]): { device: string; memory_bytes: number } {
  const chosen = devices.find((d) => d.kind === 'cuda') ?? devices.find((d) => d.kind === 'cpu') ?? { kind: 'cpu', name: 'CPU', memory_bytes: 0 };
  return { device: `${chosen.kind}:${chosen.name}`, memory_bytes: chosen.memory_bytes };
}

export function throughputKey(config: { base_model_id: string; method: string; trainer_type: string }): ThroughputKey {
  return { base_model_id: config.base_model_id, method: config.method, trainer_type: config.trainer_type };
}

const GIB = 1024 ** 3;
const tenths = (seconds: number | null) => (seconds === null ? null : Math.round(seconds * 10) / 10);

/** What a completed job spent around its steps: its time from start to completed, less the steps' time at the speed
 *  it measured (what the next estimate adds to the steps). */
export function overheadSeconds(startedAt: Date, completedAt: Date, trainingTokens: number, tokensPerSecond: number): number {
  return Math.max(0, (completedAt.getTime() - startedAt.getTime()) / 1000 - trainingTokens / tokensPerSecond);
}
const gib = (bytes: number) => `${(bytes / GIB).toFixed(1)} GiB`;

/** Adds the per-worker estimates (workers serving `train`) and the fleet warnings to the core's report. */
export function withEstimates(report: CoreReport, workers: readonly WorkerRow[], measured: readonly ThroughputRow[]): PreflightReport {
  const training = workers.filter((w) => w.queues.includes('train'));
  const peak = report.memory.estimated_peak_bytes;
  const estimates = training.map((worker) => {
    const { device, memory_bytes } = trainingDevice(worker.devices);
    const row = measured.find((m) => m.host === worker.host && m.device === device);
    const tokensPerSecond = row?.tokens_per_second ?? null;
    const training = tokensPerSecond ? report.training_tokens / tokensPerSecond : null;
    const overhead = row?.overhead_seconds ?? null;
    return {
      worker_id: worker.worker_id,
      host: worker.host,
      device,
      tokens_per_second: tokensPerSecond,
      measured_by: row?.measured_by ?? null,
      training_seconds: tenths(training),
      overhead_seconds: tenths(overhead),
      wall_seconds: tenths(training === null ? null : training + (overhead ?? 0)),
      chat_ready_seconds: worker.queues.includes('infer') ? tenths(row?.chat_ready_seconds ?? null) : null,
      memory_bytes,
      fits: memory_bytes === 0 || peak <= memory_bytes,
    };
  });
  const warnings = report.warnings.filter((w) => w.code !== 'no_training_worker' && w.code !== 'does_not_fit');
  if (training.length === 0) {
    warnings.push({ code: 'no_training_worker', message: 'no live worker serves the train queue, so the job would wait; start one (pnpm start:worker, with train in WORKER_QUEUES)' });
  } else if (!estimates.some((e) => e.fits)) {
    const largest = Math.max(...estimates.map((e) => e.memory_bytes));
    warnings.push({
      code: 'does_not_fit',
      message: `the estimated peak memory (${gib(peak)}) is more than any training worker has (largest ${gib(largest)}); lower batch_size or max_length, or train with LoRA (or QLoRA on a GPU) instead of Full`,
    });
  }
  return { ...report, estimates, warnings };
}

/** withEstimates over the live workers and every measurement of this model, method and trainer. */
export async function estimateOnFleet(platform: Platform, report: CoreReport, key: ThroughputKey): Promise<PreflightReport> {
  const [workers, measured] = await Promise.all([platform.workers.live(platform.config.WORKER_TIMEOUT_S), platform.workers.throughput(key)]);
  return withEstimates(report, workers, measured);
}
