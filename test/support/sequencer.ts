// The order test files start in: vitest's own (failed first, then slowest first by the durations it remembers), except
// that on a run with nothing remembered (a clean clone: CI) it would start the largest files first, and file size says
// nothing of a file's time (the README test is small and the longest). So the files vitest.config.ts names as the
// longest go first, in its order, and two workers run the rest around them: a long file started last is the run's tail.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export function longestFirst(longest: readonly string[]): typeof BaseSequencer {
  return class LongestFirst extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const sorted = await super.sort(files);
      const rank = (spec: TestSpecification) => {
        const at = longest.indexOf(relative(this.ctx.config.root, spec.moduleId));
        return at === -1 ? longest.length : at;
      };
      return sorted.map((spec, i) => ({ spec, i })).sort((a, b) => rank(a.spec) - rank(b.spec) || a.i - b.i).map(({ spec }) => spec);
    }
  };
}
