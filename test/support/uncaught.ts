// Errors that nothing caught, recorded while a test runs: a regression test for a crash asserts there were none, so it
// fails when a fix only leans on the process's last line of defence (packages/platform/src/process-guard.ts) instead
// of removing the cause.
export async function uncaughtDuring(run: () => Promise<void>): Promise<unknown[]> {
  const caught: unknown[] = [];
  const record = (err: unknown) => caught.push(err);
  process.on('uncaughtException', record);
  process.on('unhandledRejection', record);
  try {
    await run();
    // An error emitted on a stream or a timer surfaces on the next turns of the event loop.
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('uncaughtException', record);
    process.off('unhandledRejection', record);
  }
  return caught;
}
