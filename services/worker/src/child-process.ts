// Worker code that loads a model runs in a child process (#45): a native abort or an out-of-memory kill there ends
// the child, not the worker, whose process in the embedded default is the whole stack. The worker starts and
// supervises such a child with @ftp/core-client/supervised-child; this is the child's side.
import { writeFileSync } from 'node:fs';

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
