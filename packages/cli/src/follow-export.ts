// Following an export until it ends. The export service has no event stream for exports: GET /exports/{job_id}
// shows the job's latest export, which is polled (every POLL_MS) until it is ours and no longer running.
// One live line on a terminal (status, message, time taken), a line per change of message otherwise.
import cliProgress from 'cli-progress';
import type { ExportDetails } from '@ftp/schema';
import { ApiError, CliError } from './errors.ts';
import type { FollowMode } from './follow.ts';
import { segment, type Api } from './http.ts';
import { formatDuration, printLine } from './output.ts';

const POLL_MS = 500;
/** Failed polls in a row (a restarting service, a 5xx) before giving up. */
const MAX_FAILURES = 10;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** GET /exports/{job_id}, retried while the service is briefly unavailable. */
async function exportDetails(api: Api, jobId: string): Promise<ExportDetails> {
  for (let failures = 1; ; failures += 1) {
    try {
      return await api.json<ExportDetails>('export', 'GET', `/exports/${segment(jobId)}`);
    } catch (err) {
      // An answer about the request itself (unknown job, bad key) will not change on a retry.
      const transient = (err instanceof ApiError && err.status >= 500) || (err instanceof CliError && !(err instanceof ApiError));
      if (!transient || failures >= MAX_FAILURES) throw err;
      await sleep(POLL_MS * failures);
    }
  }
}

/** Waits until export `exportId` of job `jobId` has completed or failed; returns the job's export details then. */
export async function followExport(api: Api, jobId: string, exportId: string, mode: FollowMode): Promise<ExportDetails> {
  const started = Date.now();
  const bar = mode === 'live'
    ? new cliProgress.SingleBar({ format: 'export {status}: {message} | {elapsed}', hideCursor: true, clearOnComplete: false })
    : null;
  bar?.start(1, 0, { status: 'running', message: 'queued', elapsed: '0s' });
  const onInterrupt = () => {
    bar?.stop();
    process.stderr.write(`\nstopped waiting for export ${exportId}; it goes on (ftune exports get ${jobId} shows it)\n`);
    process.exit(130);
  };
  process.once('SIGINT', onInterrupt);
  let lastMessage: string | undefined;
  try {
    for (;;) {
      const details = await exportDetails(api, jobId);
      const latest = details.latest_export;
      if (!latest || latest.export_id !== exportId) {
        // Only the latest export of a job is shown: a newer one hides ours.
        const newer = latest ? ` (${latest.export_id}, started ${latest.started_at})` : '';
        throw new CliError(`export ${exportId} of job ${jobId} is no longer the job's latest export${newer}; ftune exports get ${jobId} shows what the job has now`);
      }
      const message = latest.message ?? '';
      bar?.update(latest.status === 'running' ? 0 : 1, { status: latest.status, message, elapsed: formatDuration((Date.now() - started) / 1000) });
      if (mode === 'lines' && message !== lastMessage && latest.status === 'running') printLine(`export ${latest.status}: ${message || '-'}`);
      lastMessage = message;
      if (latest.status !== 'running') return details;
      await sleep(POLL_MS);
    }
  } finally {
    process.removeListener('SIGINT', onInterrupt);
    bar?.stop();
  }
}
