// API keys for AUTH_MODE=token: `pnpm keys create <user> [name]`, `pnpm keys list`, `pnpm keys revoke <key_id>`.
// The embedded store has one owner, so run this while the stack is stopped (scaled out, with DATABASE_URL, any time).
import { loadConfig, openDatabase, ApiKeysRepository } from '@ftp/platform';

const USAGE = 'usage: pnpm keys create <user_id> [name] | pnpm keys list | pnpm keys revoke <key_id>';

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || !['create', 'list', 'revoke'].includes(command)) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = loadConfig();
  const db = await openDatabase(config).catch((err: Error) => {
    throw new Error(`${err.message}${config.DATABASE_URL ? '' : '; stop the running stack first'}`);
  });
  const keys = new ApiKeysRepository(db);
  try {
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
  } finally {
    await db.close();
  }
}

process.exitCode = await main(process.argv.slice(2));
