// The fleet's part of the pre-flight report: wall time per live training worker from the speed measured on its host
// and device, whether the estimated peak memory fits it, and the warnings when nothing can run the job.
import { describe, expect, it } from 'vitest';
import type { ThroughputRow, WorkerRow } from '@ftp/platform';
import { overheadSeconds, trainingDevice, withEstimates, type CoreReport } from '../src/training/preflight.ts';
import { estimatedTime } from '../src/training/readable.ts';

const GIB = 1024 ** 3;

const report = (peak: number): CoreReport => ({
  trainer_type: 'sft', method: 'LoRA', examples: { train: 10, test: null },
  tokens: { min: 5, median: 7, p95: 9, max: 10, total: 70 }, max_length: 64, truncated: { examples: 0, loss_tokens_lost: 0 },
  loss_token_share: 0.4, samples: [], steps: { per_epoch: 3, total: 9, effective_batch_size: 4 }, training_tokens: 6000,
  model: { parameters: 1000, trainable_parameters: 100, dtype: 'float32', hidden_size: 16, num_layers: 2, vocab_size: 300 },
  memory: { estimated_peak_bytes: peak, weights_bytes: 1, training_state_bytes: 1, activations_bytes: 1 },
  throughput: null, warnings: [{ code: 'truncated', message: 'kept' }],
});

const worker = (id: string, host: string, devices: WorkerRow['devices'], queues = ['train']): WorkerRow => ({
  worker_id: id, host, pid: 1, devices, queues, current_jobs: [], preparing: null, started_at: new Date(), heartbeat_at: new Date(),
});
const cpu = (gib: number) => ({ kind: 'cpu' as const, name: 'Xeon × 2', memory_bytes: gib * GIB });
const gpu = (gib: number) => ({ kind: 'cuda' as const, name: 'H100', memory_bytes: gib * GIB });
const measured = (host: string, device: string, tps: number, overhead: number | null = null, chatReady: number | null = null): ThroughputRow => ({
  host, device, base_model_id: 'm', method: 'LoRA', trainer_type: 'sft', tokens_per_second: tps, measured_by: overhead === null ? 'probe' : 'job', overhead_seconds: overhead,
  chat_ready_seconds: chatReady, measured_at: new Date(),
});

describe('pre-flight estimates', () => {
  it('trains on the first GPU, else the CPU', () => {
    expect(trainingDevice([gpu(80), cpu(64)])).toEqual({ device: 'cuda:H100', memory_bytes: 80 * GIB });
    expect(trainingDevice([cpu(24)])).toEqual({ device: 'cpu:Xeon × 2', memory_bytes: 24 * GIB });
  });

  it('gives each training worker its wall time from its own host and device, null where none was measured', () => {
    const workers = [worker('w1', 'gpu-box', [gpu(80), cpu(64)]), worker('w2', 'laptop', [cpu(24)]), worker('w3', 'infer-only', [cpu(24)], ['infer'])];
    const out = withEstimates(report(30 * GIB), workers, [measured('gpu-box', 'cuda:H100', 3000), measured('laptop', 'cuda:H100', 10)]);
    expect(out.estimates.map((e) => [e.worker_id, e.wall_seconds, e.fits])).toEqual([['w1', 2, true], ['w2', null, false]]);
    expect(out.warnings.map((w) => w.code)).toEqual(['truncated']);
  });

  it('counts what the last job on the host spent around its steps: the time from start to completed (#39)', () => {
    // A job of 33 s whose steps took 1.6 s was estimated at 1.6 s: its 31.4 s of loading, preparing and saving count now.
    const startedAt = new Date('2026-01-01T00:00:00Z');
    const overhead = overheadSeconds(startedAt, new Date(startedAt.getTime() + 33_000), 6000, 3750);
    expect(overhead).toBeCloseTo(31.4, 5);
    const out = withEstimates(report(GIB), [worker('w1', 'laptop', [cpu(24)]), worker('w2', 'new-box', [cpu(24)])], [measured('laptop', 'cpu:Xeon × 2', 3750, overhead), measured('new-box', 'cpu:Xeon × 2', 3000)]);
    expect(out.estimates.map((e) => [e.training_seconds, e.overhead_seconds, e.wall_seconds])).toEqual([[1.6, 31.4, 33], [2, null, 2]]);
  });

  it('says when the model is ready for chat after completed, on a worker that serves chat (#39)', () => {
    const workers = [worker('w1', 'laptop', [cpu(24)], ['train', 'infer']), worker('w2', 'trainer', [cpu(24)]), worker('w3', 'new-box', [cpu(24)], ['train', 'infer'])];
    const rows = [measured('laptop', 'cpu:Xeon × 2', 3750, 31.4, 42.04), measured('trainer', 'cpu:Xeon × 2', 3750, 31.4, 42), measured('new-box', 'cpu:Xeon × 2', 3000, 20)];
    const out = withEstimates(report(GIB), workers, rows);
    expect(out.estimates.map((e) => [e.worker_id, e.wall_seconds, e.chat_ready_seconds])).toEqual([['w1', 33, 42], ['w2', 33, null], ['w3', 22, null]]);
    expect(estimatedTime(out.estimates[0]!)).toBe('about 33 s from start to completed: 2 s of steps at 3,750 tokens/s, 31 s loading, preparing and saving; ready for chat on the fast engine about 42 s after');
    expect(estimatedTime(out.estimates[1]!)).toBe('about 33 s from start to completed: 2 s of steps at 3,750 tokens/s, 31 s loading, preparing and saving');
  });

  it('warns when the job fits no worker, or no worker trains', () => {
    const tooBig = withEstimates(report(100 * GIB), [worker('w1', 'h', [gpu(80)])], []);
    expect(tooBig.warnings.at(-1)).toMatchObject({ code: 'does_not_fit' });
    expect(tooBig.warnings.at(-1)!.message).toMatch(/100\.0 GiB.*largest 80\.0 GiB.*lower batch_size or max_length/);
    expect(withEstimates(report(GIB), [], []).warnings.at(-1)).toMatchObject({ code: 'no_training_worker' });
  });
});
