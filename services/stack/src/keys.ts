// API keys for AUTH_MODE=token: `pnpm keys create <user> [name]`, `pnpm keys list`, `pnpm keys revoke <key_id>`.
// The embedded store has one owner, so run this while the stack is stopped (scaled out, with DATABASE_URL, any time).
import { ApiKeysRepository, DataFolderInUse, loadConfig, openDatabase, type Database } from '@ftp/platform';

const USAGE = 'usage: pnpm keys create <user_id> [name] | pnpm keys list | pnpm keys revoke <key_id>';

/** A failure said in one sentence: the running stack holding the embedded database says what to do about it (#54:
 *  `pnpm keys create` while the stack ran printed a Node stack trace). */
function failure(err: unknown, argv: readonly string[]): string {
  const owner = (err as Error).cause;
  if (owner instanceof DataFolderInUse) {
    return `the embedded database in ${owner.folder} is held by the running stack (process ${owner.ownerPid}): stop it, ` +
      `run pnpm keys ${argv.join(' ')} again, then start it again (with DATABASE_URL, keys can be managed while it runs)`;
  }
  return (err as Error).message;
}

async function run(command: string, rest: string[], db: Database): Promise<number> {
  const keys = new ApiKeysRepository(db);
  if (command === 'create') {
    const [userId, name = 'cli'] = rest;
    if (!userId) {
      process.stderr.write(`${USAGE}\n`);
      return 2;
    }
    const { key, row } = await keys.create(userId, name);
    process.stdout.write(`key_id ${row.key_id} for user ${userId} (shown once, store it now):\n${key}\n`);
  } else if (command === 'list') {
    for (const row of await keys.list()) {
      const state = row.revoked_at ? `revoked ${row.revoked_at.toISOString()}` : 'live';
      process.stdout.write(`${row.key_id}\t${row.user_id}\t${row.name}\t${row.created_at.toISOString()}\t${state}\n`);
    }
  } else {
    const [keyId] = rest;
    if (!keyId || !(await keys.revoke(keyId))) {
      process.stderr.write(`no live key ${keyId ?? ''}; see pnpm keys list\n`);
      return 1;
    }
    process.stdout.write(`revoked ${keyId}\n`);
  }
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || !['create', 'list', 'revoke'].includes(command)) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  try {
    const db = await openDatabase(loadConfig());
    try {
      return await run(command, rest, db);
    } finally {
      await db.close();
    }
  } catch (err) {
    process.stderr.write(`pnpm keys: ${failure(err, argv)}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
