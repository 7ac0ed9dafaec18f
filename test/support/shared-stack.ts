// One embedded stack per test-runner worker, shared by the end-to-end files that drive a stack over HTTP (the console,
// ftune, /v1 and README tests): the first of them that runs on a worker (VITEST_POOL_ID) starts it, the next ones
// on that worker reuse it, and the run's end stops it (shared-stack-setup.ts). A run so pays one stack start and one
// set of warm engines and model caches per worker, not per file. AUTH_MODE=jwt: each file signs tokens for users of
// its own (token()), so files never see one another's datasets, jobs or exports.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SignJWT } from 'jose';
import { inject } from 'vitest';
import { stackPorts, type StackUrls } from './stack.ts';
import { pretrainedToolModelDir, PRETRAINED_TOOL_MODEL, toolModelsDir, TINY_MODEL, type ToolModel } from './tiny-model.ts';

/** The shared stack's tool-capable base model. */
export const TOOL_MODEL: ToolModel = 'tiny-qwen2.5';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

declare module 'vitest' {
  export interface ProvidedContext {
    /** The folder where each worker's shared stack is registered (shared-stack-setup.ts). */
    sharedStacks: string;
  }
}

/** What a registry file holds: enough for any later file on the worker to reach the stack. */
interface Registered {
  pid: number;
  urls: StackUrls;
  consoleUrl: string;
  jwtSecret: string;
  /** The operator's token for every service's /metrics (METRICS_TOKEN). */
  metricsToken: string;
  dataDir: string;
  modelsDir: string;
  logFile: string;
}

export interface SharedStack extends Omit<Registered, 'jwtSecret'> {
  /** A bearer credential of `user` (a JWT the stack accepts): the same user each time the same name is asked. */
  token(user: string): Promise<string>;
  /** Everything the stack wrote to stdout and stderr so far. */
  output(): Promise<string>;
}

/** The environment of the shared stack beyond ports and folders: the settings the files that share it need. */
function sharedEnv(urls: StackUrls, jwtSecret: string, metricsToken: string): Record<string, string> {
  return {
    AUTH_MODE: 'jwt',
    JWT_SECRET: jwtSecret,
    METRICS_TOKEN: metricsToken,
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    // f16 gives the same greedy text as transformers; one llama.cpp thread suits the tiny model on a busy machine.
    FAST_ENGINE_QUANTIZATION: 'f16',
    FAST_ENGINE_THREADS: '1',
    // LLM augmentation asks this very stack's /v1 (the tiny model, JSON by schema on the fast engine).
    LLM_API_BASE: `${urls.openai}/v1`,
    LLM_MODEL: TINY_MODEL,
    // A submit waits for its check of the data however long the worker's warm core takes to start on a loaded machine
    // (10 s by default, then the job's own pre-flight checks it): what the check refuses is refused at submit every run.
    SUBMIT_CHECK_MS: '120000',
    // A closed port: the hub is out of reach at once (no test may reach the internet).
    HF_ENDPOINT: 'http://127.0.0.1:9',
    // The console test's webhook receiver listens on loopback, which events are otherwise never sent to.
    WEBHOOK_ALLOW_PRIVATE: 'true',
  };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function healthy(urls: readonly string[]): Promise<boolean> {
  const up = await Promise.all(urls.map((url) => fetch(`${url}/health`).then((r) => r.ok, () => false)));
  return up.every(Boolean);
}

async function start(home: string): Promise<Registered> {
  const { env: ports, urls, consoleUrl } = await stackPorts();
  const jwtSecret = randomBytes(24).toString('base64url');
  const metricsToken = randomBytes(24).toString('base64url');
  const dataDir = path.join(home, 'data');
  const modelsDir = path.join(home, 'models');
  await fs.mkdir(dataDir, { recursive: true });
  // The tiny model, the tool-capable tiny-qwen2.5 (Qwen2.5's published template) for function calling, and the
  // pretrained SmolLM2 with that template for what a random model cannot learn.
  const [made, pretrained] = await Promise.all([toolModelsDir(), pretrainedToolModelDir()]);
  for (const name of [TINY_MODEL, TOOL_MODEL]) await fs.cp(path.join(made, name), path.join(modelsDir, name), { recursive: true });
  await fs.cp(path.join(pretrained, PRETRAINED_TOOL_MODEL), path.join(modelsDir, PRETRAINED_TOOL_MODEL), { recursive: true });
  const logFile = path.join(home, 'stack.log');
  const log = await fs.open(logFile, 'a');
  // Detached, with its output in a file: it outlives the test file that started it (the run's end stops it).
  const child = spawn(process.execPath, ['--import', 'tsx', 'services/stack/src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...ports, ...sharedEnv(urls, jwtSecret, metricsToken), DATA_DIR: dataDir, MODELS_DIR: modelsDir },
    stdio: ['ignore', log.fd, log.fd],
    detached: true,
  });
  child.unref();
  await log.close();
  const deadline = Date.now() + 180_000;
  while (!(await healthy([...Object.values(urls), consoleUrl]))) {
    if (child.exitCode !== null || !alive(child.pid!)) throw new Error(`the shared stack exited:\n${(await fs.readFile(logFile, 'utf8')).slice(-4000)}`);
    if (Date.now() > deadline) {
      process.kill(-child.pid!, 'SIGKILL');
      throw new Error(`the shared stack was not healthy within 180 s:\n${(await fs.readFile(logFile, 'utf8')).slice(-4000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { pid: child.pid!, urls, consoleUrl, jwtSecret, metricsToken, dataDir, modelsDir, logFile };
}

/** This worker's stack: started now when no earlier file on the worker started it (or it died). */
export async function sharedStack(): Promise<SharedStack> {
  const home = path.join(inject('sharedStacks'), `worker-${process.env.VITEST_POOL_ID ?? '1'}`);
  const registry = path.join(home, 'stack.json');
  let stack = await fs.readFile(registry, 'utf8').then((text) => JSON.parse(text) as Registered, () => undefined);
  if (!stack || !alive(stack.pid) || !(await healthy([...Object.values(stack.urls), stack.consoleUrl]))) {
    if (stack && alive(stack.pid)) process.kill(-stack.pid, 'SIGKILL');
    await fs.rm(home, { recursive: true, force: true });
    await fs.mkdir(home, { recursive: true });
    stack = await start(home);
    await fs.writeFile(registry, JSON.stringify(stack));
  }
  const { jwtSecret, ...reachable } = stack;
  const key = new TextEncoder().encode(jwtSecret);
  return {
    ...reachable,
    token: (user) => new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(user).setIssuedAt().setExpirationTime('4h').sign(key),
    output: () => fs.readFile(stack.logFile, 'utf8'),
  };
}

/** Stops every shared stack registered under `dir` (the run's end). */
export async function stopSharedStacks(dir: string): Promise<void> {
  const homes = await fs.readdir(dir).catch(() => [] as string[]);
  await Promise.all(homes.map(async (home) => {
    const stack = await fs.readFile(path.join(dir, home, 'stack.json'), 'utf8').then((text) => JSON.parse(text) as Registered, () => undefined);
    if (!stack || !alive(stack.pid)) return;
    process.kill(-stack.pid, 'SIGTERM'); // its process group: the stack and the cores it runs
    const deadline = Date.now() + 30_000;
    while (alive(stack.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    if (alive(stack.pid)) process.kill(-stack.pid, 'SIGKILL');
  }));
}
