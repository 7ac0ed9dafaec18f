// The embedded stack as a child process on free loopback ports (what `bash scripts/start.sh` runs), for
// tests that drive every service over real HTTP: start, restart on the same data folder, stop.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  server.close();
  return port;
}

export interface StackUrls {
  preprocessing: string;
  training: string;
  export: string;
  inference: string;
}

export interface StackProcess {
  child: ChildProcess;
  /** Everything the stack wrote so far, stdout and stderr together (its logs, a first API key in token mode). */
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Environment with four free ports and the matching service URLs. */
export async function stackPorts(): Promise<{ env: Record<string, string>; urls: StackUrls }> {
  const [p1, p2, p3, p4] = [await freePort(), await freePort(), await freePort(), await freePort()];
  return {
    env: { PREPROCESSING_PORT: String(p1), TRAINING_PORT: String(p2), EXPORT_PORT: String(p3), INFERENCE_PORT: String(p4) },
    urls: {
      preprocessing: `http://127.0.0.1:${p1}`,
      training: `http://127.0.0.1:${p2}`,
      export: `http://127.0.0.1:${p3}`,
      inference: `http://127.0.0.1:${p4}`,
    },
  };
}

/** Starts services/stack and waits until every service answers /health. */
export async function startStack(env: Record<string, string>, urls: StackUrls): Promise<StackProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'services/stack/src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => (output += chunk.toString());
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const handle: StackProcess = {
    child,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      await once(child, 'exit');
    },
  };
  for (let i = 0; i < 480; i++) {
    if (child.exitCode !== null) throw new Error(`the stack exited with code ${child.exitCode}:\n${output.slice(-4000)}`);
    const up = await Promise.all(Object.values(urls).map((url) => fetch(`${url}/health`).then((r) => r.ok, () => false)));
    if (up.every(Boolean)) return handle;
    await new Promise((r) => setTimeout(r, 250));
  }
  await handle.stop('SIGKILL');
  throw new Error(`the stack did not start:\n${output.slice(-4000)}`);
}
