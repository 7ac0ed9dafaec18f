// What the README's commands write into the repository (its walkthroughs run from the repository's root) is ignored by
// git, so following them leaves `git status` clean (#39: qa.csv and models/ were left untracked). The files are
// found in the README's own blocks: shell redirections, `--download DIR`, and Python's open(…, "w").
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readmeBlocks } from './support/readme-blocks.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Paths (relative to the root; a folder ends with /) the README's blocks write. */
function writtenByReadme(markdown: string): string[] {
  const written = new Set<string>();
  for (const block of readmeBlocks(markdown)) {
    const code = block.code.replace(/#.*$/gm, (comment) => (block.lang === 'sh' ? '' : comment));
    const found = block.lang === 'sh'
      ? [...[...code.matchAll(/(?:^|[\s'"])>{1,2}\s*([\w./-]+)/g)].map((m) => m[1]!), ...[...code.matchAll(/--download\s+([\w./-]+)/g)].map((m) => `${m[1]!}/`)]
      : [...code.matchAll(/open\(\s*["']([^"']+)["']\s*,\s*["'][wa]/g)].map((m) => m[1]!);
    // outside the repository (an absolute path: a server's config) or a descriptor (2>&1) is no file of it
    for (const file of found) if (!file.startsWith('/') && !/^&?\d$/.test(file)) written.add(path.posix.normalize(file).replace(/^\.\//, ''));
  }
  return [...written].sort();
}

const ignored = (file: string): boolean => {
  try {
    // a folder: a file inside it (a pattern for folders matches nothing that git cannot see is one)
    execFileSync('git', ['check-ignore', '-q', '--no-index', file.endsWith('/') ? `${file}x` : file], { cwd: ROOT });
    return true;
  } catch {
    return false;
  }
};

describe("the README's commands", () => {
  const written = writtenByReadme(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'));

  it('are found writing the files a newcomer sees appear', () => {
    expect(written).toEqual(expect.arrayContaining(['qa.csv', 'models/', 'train.jsonl', 'weather.jsonl']));
  });

  it('leave nothing untracked: git ignores every file they write', () => {
    expect(written.filter((file) => !ignored(file))).toEqual([]);
  });

  it('and nothing of the repository is ignored for it', () => {
    // /models/ is the root's folder only: the worker's source folder of the same name stays tracked
    expect(ignored('services/worker/src/models/job-models.ts')).toBe(false);
  });
});
