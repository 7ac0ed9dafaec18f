// A Python client of the Tinker service run to its end, as the tests run them: the SDK's telemetry off, the hub offline.
import { spawn } from 'node:child_process';

/** The SDK's interpreter (test/tools' venv), and the core's, whose dev group holds the tinker-cookbook. */
export const SDK_PYTHON = 'test/tools/.venv/bin/python';
export const CORE_PYTHON = 'core/.venv/bin/python';

export const SDK_ENV = { TINKER_TELEMETRY: '0', HF_HUB_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error' };

export function runPython(python: string, argv: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(python, argv, { env: { ...process.env, ...SDK_ENV, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
