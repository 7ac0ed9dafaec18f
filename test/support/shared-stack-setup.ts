// vitest globalSetup: the folder where each test-runner worker registers its shared embedded stack
// (shared-stack.ts), and, when the run ends, every such stack stopped and the folder removed.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { stopSharedStacks } from './shared-stack.ts';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-shared-stacks-'));
  project.provide('sharedStacks', dir);
  return async () => {
    await stopSharedStacks(dir);
    await fs.rm(dir, { recursive: true, force: true });
  };
}
