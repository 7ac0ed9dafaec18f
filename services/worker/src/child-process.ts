// Worker code that loads a model runs in a child process (#45): a native abort or an out-of-memory kill there ends
// the child, not the worker, whose process in the embedded default is the whole stack. These start such a child (one
// of the worker's TypeScript files, under tsx's loader whatever runs this process) and say how it ended. The child
// asks the kernel to take it first when memory runs out (`childOfWorker`).
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

/** tsx's loader (its package's one export), by path. */
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const STDERR_TAIL = 20;

/** Starts `file` with `args` and an IPC channel; its stderr's last lines are kept for the reason it ends with. */
export function forkTypeScript(file: string, args: string[]): { child: ChildProcess; stderr: string[] } {
  const child = fork(file, args, {
    execArgv: ['--import', TSX],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  const stderr: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (line.trim() === '') return;
    stderr.push(line);
    if (stderr.length > STDERR_TAIL) stderr.shift();
  });
  return { child, stderr };
}

/** How a child process ended, in words. */
export function ending(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `was killed by ${signal}` : `exited with code ${code}`;
}

/** The last lines the child wrote to stderr, for a message. */
export const why = (stderr: readonly string[]) => (stderr.length ? `: ${stderr.slice(-3).join(' | ')}` : '');

/** Calls `then(code, signal)` once the child has exited and its stderr has been read: at its 'close', or 200 ms after
 *  its 'exit' (a process it started may hold the pipe open, and then 'close' never comes). */
export function ended(child: ChildProcess, then: (code: number | null, signal: NodeJS.Signals | null) => void): void {
  let done = false;
  const once = (code: number | null, signal: NodeJS.Signals | null) => {
    if (done) return;
    done = true;
    then(code, signal);
  };
  child.once('close', once);
  child.once('exit', (code, signal) => setTimeout(() => once(code, signal), 200).unref());
}

/** In the child: the kernel takes this process before anything else when memory runs out, and it exits when the
 *  worker goes (its IPC channel closes). */
export function childOfWorker(): void {
  try {
    writeFileSync('/proc/self/oom_score_adj', '1000');
  } catch {
    // not Linux, or not allowed: the process is still apart from the worker
  }
  process.on('disconnect', () => process.exit(0));
}
