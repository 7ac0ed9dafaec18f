// What a worker reports it can run on: each CUDA GPU (name, memory) as nvidia-smi lists it, and the CPU with the
// machine's memory. Fast: no torch import. Submit-time checks (QLoRA needs CUDA) read these from the registry.
import { execFile } from 'node:child_process';
import os from 'node:os';
import { promisify } from 'node:util';
import type { DeviceInfo, Metrics } from '@ftp/platform';

export async function cudaDevices(): Promise<DeviceInfo[]> {
  try {
    const { stdout } = await promisify(execFile)('nvidia-smi', ['--query-gpu=name,memory.total', '--format=csv,noheader,nounits'], { timeout: 10_000 });
    return stdout
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => {
        const [name = 'GPU', mib = '0'] = line.split(',').map((part) => part.trim());
        return { kind: 'cuda' as const, name, memory_bytes: Math.round(Number(mib) * 1024 * 1024) || 0 };
      });
  } catch {
    return []; // no driver, no GPU
  }
}

export async function detectDevices(): Promise<DeviceInfo[]> {
  const cpu: DeviceInfo = { kind: 'cpu', name: `${os.cpus()[0]?.model.trim() ?? 'CPU'} × ${os.availableParallelism()}`, memory_bytes: os.totalmem() };
  return [...(await cudaDevices()), cpu];
}

/** Per GPU, read from nvidia-smi at each scrape: memory used and total (bytes) and utilisation (0–1). Without a GPU
 *  (or a driver) the series are absent, not 0. Registered once per registry, however many workers share it. */
export function registerGpuMetrics(metrics: Metrics): void {
  if (metrics.registry.getSingleMetric('ftp_gpu_memory_used_bytes')) return;
  const read = metrics.perScrape(readGpus); // the three gauges of one scrape share one nvidia-smi call
  const gauge = (name: string, help: string, value: (gpu: GpuReading) => number) =>
    metrics.gaugeAtScrape({ name, help, labelNames: ['gpu', 'name'] }, async (g) => {
      for (const gpu of await read()) g.set({ gpu: String(gpu.index), name: gpu.name }, value(gpu));
    });
  gauge('ftp_gpu_memory_used_bytes', 'GPU memory in use, per GPU of this worker', (gpu) => gpu.usedBytes);
  gauge('ftp_gpu_memory_total_bytes', 'GPU memory, per GPU of this worker', (gpu) => gpu.totalBytes);
  gauge('ftp_gpu_utilization_ratio', 'GPU busy share over the driver\'s last sample period (0–1), per GPU of this worker', (gpu) => gpu.utilization);
}

interface GpuReading {
  index: number;
  name: string;
  usedBytes: number;
  totalBytes: number;
  utilization: number;
}

async function readGpus(): Promise<GpuReading[]> {
  try {
    const { stdout } = await promisify(execFile)('nvidia-smi', ['--query-gpu=index,name,memory.used,memory.total,utilization.gpu', '--format=csv,noheader,nounits'], { timeout: 10_000 });
    return stdout.split('\n').filter((line) => line.trim() !== '').map((line) => {
      const [index = '0', name = 'GPU', used = '0', total = '0', busy = '0'] = line.split(',').map((part) => part.trim());
      return { index: Number(index), name, usedBytes: Number(used) * 1024 * 1024, totalBytes: Number(total) * 1024 * 1024, utilization: Number(busy) / 100 };
    });
  } catch {
    return []; // no driver, no GPU
  }
}
