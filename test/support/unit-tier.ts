// The unit tier's rule, enforced (vitest.config.ts, project `unit`): a unit test starts no child process and listens on
// no port. PGlite, app.inject and in-process work are fine; a test that needs a process or a socket fails here with
// what to do, rather than making `pnpm test:fast` slow or flaky. Node's builtin modules are patched, then their ESM
// named exports synced (module.syncBuiltinESMExports), so `import { spawn } from 'node:child_process'` sees it too.
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

const MOVE = 'add the file to SERVICE_TESTS or END_TO_END_TESTS in vitest.config.ts';

function refuse(what: string): never {
  throw new Error(`a unit test may not ${what}: ${MOVE}`);
}

for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const) {
  (childProcess as Record<string, unknown>)[name] = (command: unknown) => refuse(`start a child process (${name} ${String(command)})`);
}
net.Server.prototype.listen = function listen(): never {
  return refuse('listen on a port');
};
syncBuiltinESMExports();
