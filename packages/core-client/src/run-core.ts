// Runs one core command as a child process: spec file in, JSON-lines events out (see events.ts).
// Secrets travel in the child's environment only. Cancelling sends SIGTERM: the core saves a checkpoint
// at the next step and exits with `error` "cancelled"; a core that ignores it is killed after a grace period.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCoreEventLine, type CoreEvent } from './events.ts';
import { ending, keepTail, why } from './supervised-child.ts';

/** The core's virtual environment made by `uv sync` in core/ (scripts/bootstrap.sh). */
export const DEFAULT_CORE_PYTHON = fileURLToPath(new URL('../../../core/.venv/bin/python', import.meta.url));
const CORE_DIR = fileURLToPath(new URL('../../../core/', import.meta.url));

export type CoreCommand = 'train' | 'preflight' | 'merge' | 'generate' | 'make-tiny-model' | 'import-model' | 'gguf' | 'onnx' | 'benchmark' | 'sweep';

export interface RunCoreOptions {
  command: CoreCommand;
  /** The spec: written to `specFile` as JSON. Must never contain a secret. */
  spec: Record<string, unknown>;
  specFile: string;
  /** Extra environment for the child: secrets (HF_TOKEN, …) and settings. */
  env?: Record<string, string | undefined>;
  python?: string;
  onEvent?: (event: CoreEvent) => void | Promise<void>;
  /** Lines the core wrote to stderr (library logs); the last ones are kept for error messages. */
  onStderr?: (line: string) => void;
  signal?: AbortSignal;
  /** How long a cancelled core may take to checkpoint and exit before it is killed. */
  cancelGraceMs?: number;
  /** Processes of one job (train only): above 1 the core runs under torchrun, one rank per process (DDP); rank 0
   *  alone writes events, checkpoints and artifacts, and SIGTERM reaches every rank. */
  processes?: number;
  /** Work nobody waits on (a model prepared for chat after training): the core runs at the lowest CPU priority, so a
   *  job or a request on the same machine is not held up by it (#39). */
  background?: boolean;
}

export interface CoreResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** The core said `done` (exit code 0 only after it). */
  done: boolean;
  /** The core's `error` event, if any. */
  error?: Extract<CoreEvent, { event: 'error' }>;
  /** The last lines of stderr, for a failure the core could not describe itself. */
  stderrTail: string[];
  cancelled: boolean;
}

/** The lowest CPU priority (nice 19): background cores take only what nothing else wants. */
export const BACKGROUND_PRIORITY = 19;

/** The background cores running now, by pid: a person who comes to wait on what one makes brings it to normal
 *  priority (hurryBackgroundCores). */
const backgroundCores = new Set<number>();

/** The pids of every process under `pid` (its children, theirs, …), from each /proc/<pid>/stat's parent field. */
async function descendants(pid: number): Promise<number[]> {
  const parentOf = new Map<number, number>();
  for (const entry of await fs.readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await fs.readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // After the command's name, which may hold spaces and parentheses: state, then the parent's pid.
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (parent) parentOf.set(Number(entry), parent);
  }
  const found = [pid];
  for (let i = 0; i < found.length; i += 1) for (const [child, parent] of parentOf) if (parent === found[i]) found.push(child);
  return found;
}

/** Someone now waits on what the background cores make (a chat that joins the conversion prepared after training: at
 *  nice 19 it ran only on what a training or other requests left: on CI's two busy CPUs a first chat got no answer in
 *  300 s):
 *  every thread of each, and of each process it started, is brought to this process's priority, and stays there.
 *  Linux lets a process raise a priority only with privilege (root, CAP_SYS_NICE or RLIMIT_NICE): where refused, the
 *  core keeps running niced. Returns how many threads were raised. */
export async function hurryBackgroundCores(): Promise<number> {
  const priority = os.getPriority();
  let raised = 0;
  for (const pid of [...backgroundCores]) {
    backgroundCores.delete(pid);
    for (const process of await descendants(pid)) {
      for (const tid of await fs.readdir(`/proc/${process}/task`).catch(() => [] as string[])) {
        try {
          os.setPriority(Number(tid), priority);
          raised += 1;
        } catch {
          // not allowed here, or the thread ended: it runs on as it was
        }
      }
    }
  }
  return raised;
}

export interface CoreProcess {
  child: ChildProcessWithoutNullStreams;
  /** The last lines of stderr (library logs), for failures the core could not describe itself. */
  stderrTail: string[];
}

/** Starts `python -m ftcore <args>` in core/ (under `torch.distributed.run` for several processes), unbuffered, all
 *  three streams piped; stderr lines are passed to `onStderr` and the last ones kept. Used by one-shot commands
 *  (runCore) and the warm server (CoreServer). */
export function spawnCore(
  args: readonly string[],
  options: { python?: string; env?: Record<string, string | undefined>; onStderr?: (line: string) => void; processes?: number; background?: boolean } = {},
): CoreProcess {
  const processes = options.processes ?? 1;
  // --standalone: a rendezvous on a free local port, so jobs on one machine never meet each other's ranks.
  const launcher = processes > 1 ? ['-m', 'torch.distributed.run', '--standalone', `--nproc_per_node=${processes}`] : [];
  const child = spawn(options.python ?? process.env.CORE_PYTHON ?? DEFAULT_CORE_PYTHON, [...launcher, '-m', 'ftcore', ...args], {
    cwd: CORE_DIR,
    env: { ...process.env, PYTHONUNBUFFERED: '1', ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  // Niced before it starts its threads and processes, which inherit it. A system that refuses is no reason to fail.
  if (options.background && child.pid !== undefined) {
    const pid = child.pid;
    try {
      os.setPriority(pid, BACKGROUND_PRIORITY);
      backgroundCores.add(pid);
      child.once('exit', () => backgroundCores.delete(pid));
    } catch {
      // runs at normal priority
    }
  }
  return { child, stderrTail: keepTail(child.stderr, options.onStderr) };
}

/** A line of the core's stdout as its event; a line that is none is kept with the stderr tail, for the message the
 *  core's failure ends up with. */
export function coreEventOf(line: string, stderrTail: string[]): CoreEvent | undefined {
  try {
    return parseCoreEventLine(line);
  } catch (err) {
    stderrTail.push(`unparseable core output: ${line.slice(0, 200)} (${(err as Error).message})`);
    return undefined;
  }
}

export async function runCore(options: RunCoreOptions): Promise<CoreResult> {
  await fs.mkdir(path.dirname(options.specFile), { recursive: true });
  await fs.writeFile(options.specFile, JSON.stringify(options.spec, null, 2));
  // stdin stays open: the core exits when it closes, so a worker that dies takes its core with it.
  const { child, stderrTail } = spawnCore([options.command, '--spec', options.specFile], {
    ...(options.python ? { python: options.python } : {}),
    env: { FTCORE_EXIT_WITH_PARENT: '1', ...options.env },
    ...(options.onStderr ? { onStderr: options.onStderr } : {}),
    ...(options.processes ? { processes: options.processes } : {}),
    ...(options.background ? { background: true } : {}),
  });

  const result: CoreResult = { exitCode: null, signal: null, done: false, stderrTail, cancelled: false };
  let killTimer: NodeJS.Timeout | undefined;
  const cancel = () => {
    result.cancelled = true;
    child.kill('SIGTERM');
    killTimer = setTimeout(() => child.kill('SIGKILL'), options.cancelGraceMs ?? 60_000);
  };
  if (options.signal?.aborted) cancel();
  options.signal?.addEventListener('abort', cancel, { once: true });

  const exited = new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      result.exitCode = code;
      result.signal = signal;
      resolve();
    });
  });

  // Events are handled one after another, in order: state updates must not interleave.
  for await (const line of createInterface({ input: child.stdout })) {
    const event = line.trim() === '' ? undefined : coreEventOf(line, result.stderrTail);
    if (!event) continue;
    if (event.event === 'done') result.done = true;
    if (event.event === 'error') result.error = event;
    await options.onEvent?.(event);
  }
  await exited;
  if (killTimer) clearTimeout(killTimer);
  options.signal?.removeEventListener('abort', cancel);
  child.stdin.destroy();
  return result;
}

/** One sentence for a failed run: the core's own error, else the end of its stderr, else the exit status. */
export function describeCoreFailure(result: CoreResult): string {
  if (result.error) return result.error.message;
  const tail = why(result.stderrTail);
  const status = ending({ code: result.exitCode, signal: result.signal });
  return tail ? `the ML core ${status}${tail}` : `the ML core ${status} without reporting an error`;
}
