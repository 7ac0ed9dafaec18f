// One processed dataset augmented with a language model, start to end: take it (processing, held by no worker), open
// its sealed llm_api_key, read the source again and write every split with the augmentation the request asked for,
// reporting progress on the row; then `ready` with its splits, or `failed` with a sentence a person can act on and
// nothing stored. A worker that stops hands it back to the queue (it starts over: what a language model wrote is not
// kept half-way); a dataset deleted meanwhile is dropped with what was written for it.
import { AppError, type Platform } from '@ftp/platform';
import { augmentQueue } from '@ftp/jobs/queues';
import { datasetSource, LlmClient, LlmUnavailable, runProcessing, type ProcessingProgress } from '@ftp/datasets';
import { SHUTDOWN } from '../training/job-context.ts';

class ProcessingFailure extends Error {}
/** The row is no longer this worker's: deleted, or taken for dead and given to another. */
class NotOurs extends Error {}

/** Progress reaches the row at most this often (the last report always). */
const REPORT_EVERY_MS = 1000;

export interface ProcessingContext {
  platform: Platform;
  workerId: string;
  signal: AbortSignal;
}

export async function runProcessingJob(ctx: ProcessingContext, processedDatasetId: string): Promise<void> {
  const { platform, workerId, signal } = ctx;
  const row = await platform.datasets.claimProcessing(processedDatasetId, workerId);
  if (!row) return; // ready, failed, deleted, or taken by another worker meanwhile
  const log = platform.logger.child({ processedDatasetId });
  // Ends the requests still queued or in flight when the run ends early (a failed request fails the dataset at once).
  const run = new AbortController();
  const forward = () => run.abort(signal.reason);
  signal.addEventListener('abort', forward, { once: true });
  try {
    const apiKey = (await platform.secrets.open(processedDatasetId))?.llmApiKey;
    if (!apiKey) throw new ProcessingFailure(`the llm_api_key of this request is no longer stored (secrets are kept SECRET_TTL_S); process the dataset again`);
    const { LLM_API_BASE: apiBase, LLM_MODEL: model } = platform.config;
    if (!apiBase || !model) throw new ProcessingFailure(`worker ${workerId} has no LLM_API_BASE or LLM_MODEL; set both in the environment of the workers that serve the augment queue`);
    const llm = new LlmClient({
      apiBase, model, apiKey, signal: run.signal,
      concurrency: platform.config.LLM_CONCURRENCY,
      maxRetries: platform.config.LLM_MAX_RETRIES,
      requestTimeoutMs: platform.config.LLM_TIMEOUT_MS,
      deadlineMs: platform.config.AUGMENT_TIMEOUT_S * 1000,
    });
    let reportedAt = 0;
    const report = async (progress: ProcessingProgress) => {
      signal.throwIfAborted();
      if (Date.now() - reportedAt < REPORT_EVERY_MS && progress.done < progress.total) return;
      reportedAt = Date.now();
      if (!(await platform.datasets.reportProcessing(processedDatasetId, workerId, progress))) throw new NotOurs();
    };
    const done = await runProcessing(platform, row, await datasetSource(platform, row.user_id, row), { llm, onProgress: report });
    if (!(await platform.datasets.finishProcessing(processedDatasetId, workerId, done))) throw new NotOurs();
    await platform.secrets.drop(processedDatasetId);
    log.info({ augmentation: done.augmentation, rows: done.num_examples }, 'dataset processed');
  } catch (err) {
    if (signal.aborted && signal.reason === SHUTDOWN) {
      if (await platform.datasets.releaseProcessing({ processed_dataset_id: processedDatasetId, worker_id: workerId })) {
        await platform.queue.add(augmentQueue, { processedDatasetId });
      }
      log.warn('dataset handed back to the queue: the worker is stopping');
      return;
    }
    if (err instanceof NotOurs) {
      // Deleted, or failed by someone else (its upload deleted with cancel_jobs): nothing may stay under its prefix.
      // Taken by another worker: that one writes there now.
      const now = await platform.datasets.getForWorker(processedDatasetId);
      if (!now || now.status === 'failed') {
        await platform.blobs.deletePrefix(row.blob_prefix);
        await platform.secrets.drop(processedDatasetId);
      }
      log.warn('dataset deleted, failed or taken from this worker while processing; stopped');
      return;
    }
    const known = err instanceof ProcessingFailure || err instanceof LlmUnavailable || err instanceof AppError;
    if (!known) log.error({ err }, 'dataset processing failed');
    const message = known ? (err as Error).message : `the worker failed: ${(err as Error).message}`;
    await platform.datasets.failProcessing(processedDatasetId, workerId, message);
    await platform.secrets.drop(processedDatasetId);
  } finally {
    signal.removeEventListener('abort', forward);
    run.abort('the dataset’s processing ended');
  }
}
