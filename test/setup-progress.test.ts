// The setup steps of start.sh and test.sh (bootstrap.sh) that take minutes on a fresh machine say so while they run
// (#39: `uv sync --quiet` was 67 s of silence): scripts/progress.sh's `step`, silent when quick.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

function step(what: string, command: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', `source scripts/progress.sh; step '${what}' ${command}`, 'setup'], { cwd: ROOT }, (err, _stdout, stderr) =>
      resolve({ code: err ? Number(err.code) : 0, stderr }),
    );
  });
}

describe('a setup step', () => {
  it('that runs past 3 s says what it does and how long it took', async () => {
    const { code, stderr } = await step('installing the packages', 'sleep 4');
    expect(code).toBe(0);
    expect(stderr).toMatch(/^setup: installing the packages…\nsetup: installing the packages: done in [45] s\n$/);
  });

  it('that is quick says nothing, and a failure keeps its exit status', async () => {
    expect(await step('checking', 'true')).toEqual({ code: 0, stderr: '' });
    expect((await step('checking', 'bash -c "exit 3"')).code).toBe(3);
  });

  it('is how bootstrap.sh runs the Python installs', async () => {
    const bootstrap = await fs.readFile(`${ROOT}scripts/bootstrap.sh`, 'utf8');
    expect(bootstrap).toMatch(/step "installing the ML core's Python packages[^"]*" \\\n\s+bash -c 'cd core && uv sync/);
    expect(bootstrap).not.toMatch(/^\s*\(cd core && uv sync/m);
  });
});
