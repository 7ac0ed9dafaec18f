// Three tiers, one run (README "Contributing"): `pnpm test` runs them all, `pnpm test:fast` the unit tier alone.
// - unit: starts no child process and listens on no port (PGlite, app.inject and in-process work are fine); enforced by
//   test/support/unit-tier.ts, so a file that needs a process fails there and names where to move it. No servers.
// - service: one service, package or worker over real processes and sockets: PostgreSQL, Redis and SeaweedFS started
//   once per run (test/servers/global-setup.ts), each file with its own database, key prefix or bucket.
// - end-to-end: test/'s files that start processes (and ftune's against a stack): the stack, its scripts and documents
//   driven from outside (HTTP, ftune, the SDKs, a browser, the README). The files that drive an embedded stack share
//   one per worker (test/support/shared-stack.ts), stopped at the run's end; the servers as for the service tier.
// Two workers: for most of a file's time one process is busy (a training, a service) and the other CPU idle.
import { configDefaults, defineConfig } from 'vitest/config';
import { longestFirst } from './test/support/sequencer.ts';

const ALL = ['packages/*/test/**/*.test.ts', 'services/*/test/**/*.test.ts', 'test/**/*.test.ts'];

/** Files outside test/ that start processes or listen: the service tier. */
const SERVICE_TESTS = [
  'packages/cli/test/eval-wait.test.ts',
  'packages/cli/test/http.test.ts',
  'packages/core-client/test/core-server.test.ts',
  'packages/core-client/test/run-core.test.ts',
  'packages/core-client/test/supervised-child.test.ts',
  'packages/datasets/test/hub-errors.test.ts',
  'packages/datasets/test/hub.test.ts',
  'packages/datasets/test/llm.test.ts',
  'packages/jobs/test/model-store.test.ts',
  'packages/jobs/test/reconciler.test.ts',
  'packages/jobs/test/webhook-deliverer.test.ts',
  'packages/platform/test/blob-store-contract.test.ts',
  'packages/platform/test/database-contract.test.ts',
  'packages/platform/test/process-guard.test.ts',
  'packages/platform/test/queue-contract.test.ts',
  'packages/platform/test/request-lifetime.test.ts',
  'packages/platform/test/service-app.test.ts',
  'services/console/test/app.test.ts',
  'services/export/test/exports.test.ts',
  'services/inference/test/inference.test.ts',
  'services/openai/test/responses.test.ts',
  'services/preprocessing/test/hub-standin.test.ts',
  'services/preprocessing/test/process-hub.test.ts',
  'services/preprocessing/test/uploads.test.ts',
  'services/stack/test/keys.test.ts',
  'services/training/test/checkpoints.test.ts',
  'services/training/test/jobs.test.ts',
  'services/training/test/mlflow.test.ts',
  'services/training/test/pause.test.ts',
  'services/training/test/processes.test.ts',
  'services/training/test/sweeps.test.ts',
  'services/worker/test/augment-queue.test.ts',
  'services/worker/test/core-killed.test.ts',
  'services/worker/test/engine-process.test.ts',
  'services/worker/test/fast-engine-gemma.test.ts',
  'services/worker/test/fast-engine.test.ts',
  'services/worker/test/hub-publish.test.ts',
  'services/worker/test/infer-queue.test.ts',
  'services/worker/test/infer-tools.test.ts',
  'services/worker/test/onnx-verify.test.ts',
  'services/worker/test/prepare-after-training.test.ts',
  'services/inference/test/evaluations.test.ts',
  'services/tinker/test/wire.test.ts',
  'services/tinker/test/sdk.test.ts',
  'services/tinker/test/idle.test.ts',
  'services/tinker/test/cookbook.test.ts',
  'services/inference/test/comparisons.test.ts',
];

/** Files under test/ (and ftune's against a stack) that start processes: the stack, its scripts and documents driven
 *  from outside. */
const END_TO_END_TESTS = [
  'packages/cli/test/cli.test.ts',
  'test/alerts.test.ts',
  'test/client-disconnect.test.ts',
  'test/console.test.ts',
  'test/contract/isolation.test.ts',
  'test/contract/schemathesis.test.ts',
  'test/engine-isolation.test.ts',
  'test/gpu-job-capture.test.ts',
  'test/metrics.test.ts',
  'test/openai-batches.test.ts',
  'test/openai-checkpoint-permissions.test.ts',
  'test/openai-compat.test.ts',
  'test/openai-rft.test.ts',
  'test/openai-tools.test.ts',
  'test/openai-uploads.test.ts',
  'test/openai-webhooks.test.ts',
  'test/outages.test.ts',
  'test/pipeline-e2e.test.ts',
  'test/readme-files.test.ts',
  'test/readme.test.ts',
  'test/scaled-out.test.ts',
  'test/scaling-out-readme.test.ts',
  'test/setup-progress.test.ts',
  'test/stack-crash.test.ts',
  'test/stored-job-rows.test.ts',
];

/** The longest files (seconds, two files at a time on 2 CPUs), started first so that none is the run's tail. */
const LONGEST_FIRST = [
  'test/readme.test.ts', // 928
  'test/contract/schemathesis.test.ts', // 425
  'test/scaled-out.test.ts', // 271
  'test/console.test.ts', // 122
  'services/inference/test/inference.test.ts', // 119
  'services/training/test/jobs.test.ts', // 115
  'test/outages.test.ts', // 113
  'test/openai-compat.test.ts', // 95
  'test/openai-rft.test.ts', // 94
  'test/pipeline-e2e.test.ts', // 79
  'test/scaling-out-readme.test.ts', // 74
  'services/worker/test/onnx-verify.test.ts', // 73
  'services/export/test/exports.test.ts', // 72
  'packages/cli/test/cli.test.ts', // 59
  'services/worker/test/fast-engine.test.ts', // 56
  'test/stack-crash.test.ts', // 52
  'test/gpu-job-capture.test.ts', // 51
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // expect.poll waits for what a page or a service shows next (a list refreshed, a form filled from a fetch): 1 s,
    // vitest's default, is less than a page's fetch takes on 2 CPUs busy with two files and the core's pytest (CI of
    // 8c6f859: the console's "deletes a processed dataset" and its base-model field). A poll that needs longer says so.
    expect: { poll: { timeout: 15_000 } },
    pool: 'forks',
    maxWorkers: 2,
    // One intra-op thread for the torch the tests' processes run (the core's conftest does the same): tiny models gain
    // nothing from a second, and with two files and the core's pytest on 2 CPUs, OpenMP threads spin-waiting for a
    // CPU another process holds are pure loss.
    env: { OMP_NUM_THREADS: '1', TOKENIZERS_PARALLELISM: 'false' },
    sequence: { sequencer: longestFirst(LONGEST_FIRST) },
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ALL, exclude: [...configDefaults.exclude, ...SERVICE_TESTS, ...END_TO_END_TESTS], setupFiles: ['test/support/unit-tier.ts'], globalSetup: ['test/support/unit-models.ts'], isolate: false },
      },
      { extends: true, test: { name: 'service', include: SERVICE_TESTS, globalSetup: ['test/servers/global-setup.ts'] } },
      { extends: true, test: { name: 'end-to-end', include: END_TO_END_TESTS, globalSetup: ['test/servers/global-setup.ts', 'test/support/shared-stack-setup.ts'] } },
    ],
  },
});
