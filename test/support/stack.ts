// Our processes as child processes on free loopback ports, for tests that drive them over real HTTP: the embedded
// stack (what `bash scripts/start.sh` runs), and, scaled out, each service and each worker on its own
// (`pnpm start:<service>`, `pnpm start:worker`). Start, kill (any signal), restart on the same data.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../servers/servers.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));


export interface StackUrls {
  preprocessing: string;
  training: string;
  export: string;
  inference: string;
  openai: string;
  tinker: string;
}

export interface NodeProcess {
  child: ChildProcess;
  /** Everything it wrote so far, stdout and stderr together (its logs, a first API key in token mode). */
  output(): string;
  /** Sends `signal` (default SIGTERM) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}
export type StackProcess = NodeProcess;

/** Environment with free ports for the six services and the console, and the services' URLs (the console's is
 *  `consoleUrl`: startStack does not wait for it). */
export async function stackPorts(): Promise<{ env: Record<string, string>; urls: StackUrls; consoleUrl: string }> {
  const [p1, p2, p3, p4, p5, p6, p7] = (await freePorts(7)) as [number, number, number, number, number, number, number];
  return {
    env: { PREPROCESSING_PORT: String(p1), TRAINING_PORT: String(p2), EXPORT_PORT: String(p3), INFERENCE_PORT: String(p4), OPENAI_PORT: String(p5), CONSOLE_PORT: String(p6), TINKER_PORT: String(p7) },
    consoleUrl: `http://127.0.0.1:${p6}`,
    urls: {
      preprocessing: `http://127.0.0.1:${p1}`,
      training: `http://127.0.0.1:${p2}`,
      export: `http://127.0.0.1:${p3}`,
      inference: `http://127.0.0.1:${p4}`,
      openai: `http://127.0.0.1:${p5}`,
      tinker: `http://127.0.0.1:${p7}`,
    },
  };
}

/** Runs one of our entry points (a path under the repository) with tsx and `env` over this process's. */
export function startNode(script: string, env: Record<string, string>): NodeProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => (output += chunk.toString());
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  return {
    child,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill(signal);
      await exited;
    },
  };
}

/** Polls until every URL answers /health with 200; fails with the processes' output when one exits first. */
export async function waitHealthy(urls: readonly string[], processes: readonly NodeProcess[], timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const exited = processes.find((p) => p.child.exitCode !== null || p.child.signalCode !== null);
    if (exited) throw new Error(`a process exited with code ${exited.child.exitCode}:\n${exited.output().slice(-4000)}`);
    const up = await Promise.all(urls.map((url) => fetch(`${url}/health`).then((r) => r.ok, () => false)));
    if (up.every(Boolean)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  await Promise.all(processes.map((p) => p.stop('SIGKILL')));
  throw new Error(`not healthy within ${timeoutMs} ms:\n${processes.map((p) => p.output().slice(-2000)).join('\n---\n')}`);
}

/** The API key a stack in token mode prints once when it starts on a fresh data folder (platform.ts). */
export function firstApiKey(stack: NodeProcess): string {
  const key = /shown once\):\s+(\S+)/.exec(stack.output())?.[1];
  if (!key) throw new Error(`no first API key in the stack's output:\n${stack.output().slice(-2000)}`);
  return key;
}

/** Starts services/stack (every service and a worker in one process) and waits until every service answers. */
export async function startStack(env: Record<string, string>, urls: StackUrls): Promise<StackProcess> {
  const stack = startNode('services/stack/src/main.ts', env);
  await waitHealthy(Object.values(urls), [stack]);
  return stack;
}
