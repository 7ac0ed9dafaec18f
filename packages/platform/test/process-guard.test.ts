// The last line of defence (process-guard.ts), in a real process: errors nothing caught are logged with their origin
// and the process lives on.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { LAST_LINE_OF_DEFENCE } from '../src/index.ts';

const SCRIPT = fileURLToPath(new URL('./fixtures/unguarded-errors.ts', import.meta.url));

describe('guardProcess', () => {
  it('logs a throwing timer, a stream error and an unhandled rejection, and the process goes on', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', SCRIPT], { timeout: 30_000 });
    const lines = stdout.trim().split('\n');
    expect(lines.at(-1)).toBe('alive after 3 errors');
    const logged = lines.slice(0, -1).map((line) => JSON.parse(line) as { msg: string; origin: string; err: { message: string } });
    expect(logged.map((l) => [l.msg, l.origin, l.err.message])).toEqual([
      [LAST_LINE_OF_DEFENCE, 'uncaughtException', 'a timer threw'],
      [LAST_LINE_OF_DEFENCE, 'uncaughtException', 'a stream failed with nobody listening'],
      [LAST_LINE_OF_DEFENCE, 'unhandledRejection', 'a promise nobody awaited'],
    ]);
  });
});
