// What a worker reports it can run on: each CUDA GPU (name, memory) as nvidia-smi lists it, and the CPU with the
// machine's memory. Fast: no torch import. Submit-time checks (QLoRA needs CUDA) read these from the registry.
import { execFile } from 'node:child_process';
import os from 'node:os';
import { promisify } from 'node:util';
import type { DeviceInfo } from '@ftp/platform';

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
