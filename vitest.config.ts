// One vitest run covers every workspace package; each test file makes its own temp data folder. PostgreSQL,
// Redis and SeaweedFS start once per run (test/servers/global-setup.ts), not per file; the end-to-end files that drive
// an embedded stack share one per worker (test/support/shared-stack.ts), stopped at the run's end.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'services/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    globalSetup: ['test/servers/global-setup.ts', 'test/support/shared-stack-setup.ts'],
  },
});
