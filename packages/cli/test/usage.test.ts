// Usage errors, said before any service is asked: a misspelt flag is named with the one it resembles (#54: `ftune
// train --datset x` said only that --dataset was missing), a missing required option is still said, and an evaluation
// names its model one way only.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../src/main.ts';

async function ftune(args: string[]): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  const code = await main(['node', 'ftune', ...args]);
  vi.restoreAllMocks();
  return { code, stderr };
}

afterEach(() => vi.restoreAllMocks());

describe('usage errors', () => {
  it('names an unknown flag and the near one, though a required option is then missing too', async () => {
    const { code, stderr } = await ftune(['train', '--datset', 'pd_1', '--model', 'tiny']);
    expect(code).toBe(2);
    expect(stderr).toContain("error: unknown option '--datset'\n(Did you mean --dataset?)");
    expect(stderr).not.toContain('not specified');
  });

  it('still says which required option is missing', async () => {
    const { code, stderr } = await ftune(['train', '--dataset', 'pd_1']);
    expect(code).toBe(2);
    expect(stderr).toContain("error: required option '--model <model>' not specified");
  });

  it.each([
    [['evaluations', 'create', '--tasks', 'arc_easy'], 'name the model: a job_id, or --base MODEL'],
    [['evaluation', 'create', '--base', 'tiny', '--with-base', '--tasks', 'arc_easy'], '--with-base choose among a job’s models'],
    [['evaluations', 'create', 'job_1', '--humaneval-k', 'x'], "option '--humaneval-k <list>' argument 'x' is invalid"],
    [['comparisons', 'create', 'pd_1', '--a', 'job_1', '--b', 'base:tiny'], "required option '--judge <model>' not specified"],
    [['compare', 'create', 'pd_1', '--a', 'job_1@0', '--b', 'base:tiny', '--judge', 'j'], "option '--a <model>' argument 'job_1@0' is invalid"],
  ])('ftune %j: exit 2, said', async (args, said) => {
    const { code, stderr } = await ftune(args);
    expect(code).toBe(2);
    expect(stderr).toContain(said);
  });
});
