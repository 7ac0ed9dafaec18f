// The batch queue's processor (/v1/batches): the input file read and checked (a file that is not a batch file fails
// the batch), then its lines answered a chunk at a time: each line prepared as its endpoint would (a line that fails is
// an error line), lines with the same model and settings generated together through the warm engines, each chunk's
// outcomes recorded before the next (a line's row is written once, so a batch resumed elsewhere answers no line twice).
// Between chunks the batch stops when it was cancelled or its window ran out; at the end the answered lines become its
// output file and the failed ones its error file. A worker that stops hands the batch back to the queue.
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import type { BatchResultRow, BatchRow, Platform } from '@ftp/platform';
import { storeUpload } from '@ftp/datasets';
import { answeredLine, failedLine, groupLines, prepareBatchLine, readBatchInput, unansweredLine, type BatchLine, type PreparedLine } from '@ftp/jobs/openai';
import { batchQueue } from '@ftp/jobs/queues';
import type { InferenceEngines } from './engines.ts';
import { runInference } from './run-inference.ts';
import { SHUTDOWN } from '../training/job-context.ts';

/** Lines prepared, generated and recorded together: the most a stopped worker answers again is none, the most a
 *  cancel waits for is one chunk. */
export const BATCH_CHUNK_LINES = 32;

interface BatchContext {
  platform: Platform;
  workerId: string;
  signal: AbortSignal;
}

type Ending = 'completed' | 'cancelled' | 'expired' | 'failed';

export async function runBatch(ctx: BatchContext, engines: InferenceEngines, batchId: string): Promise<void> {
  const { platform, workerId, signal } = ctx;
  const claimed = await platform.batches.claim(batchId, workerId);
  if (!claimed) return; // finished, gone, or taken by another worker meanwhile
  const log = platform.logger.child({ batchId });
  let row: BatchRow = claimed;
  try {
    const lines = await readInput(platform, row);
    if (!lines) return;
    if (row.status === 'validating') row = (await platform.batches.update(batchId, { status: 'in_progress', total: lines.length, in_progress_at: new Date() }, workerId)) ?? row;
    else if (row.total !== lines.length) row = (await platform.batches.update(batchId, { total: lines.length }, workerId)) ?? row;
    const answered = await platform.batches.answeredLines(batchId);
    const todo = lines.filter((l) => !answered.has(l.line));
    let ending: Ending = 'completed';
    for (let at = 0; at < todo.length; at += BATCH_CHUNK_LINES) {
      const now = await platform.batches.getForWorker(batchId);
      if (!now || now.worker_id !== workerId) return; // taken from this worker (its hold was lost)
      if (now.status === 'cancelling') {
        ending = 'cancelled';
        break;
      }
      if (now.expires_at.getTime() <= Date.now()) {
        ending = 'expired';
        await platform.batches.addResults(batchId, todo.slice(at).map((l) => unansweredLine(l, 'batch_expired', 'the batch’s 24 h window ended before this line was answered')));
        break;
      }
      await platform.batches.addResults(batchId, await answerChunk(platform, engines, row, todo.slice(at, at + BATCH_CHUNK_LINES), signal));
    }
    if (row.status === 'cancelling' || (await platform.batches.getForWorker(batchId))?.status === 'cancelling') ending = 'cancelled';
    await finalize(platform, row, workerId, ending);
    log.info({ ending, lines: lines.length }, 'batch ended');
  } catch (err) {
    if (signal.aborted && signal.reason === SHUTDOWN) {
      // It goes on from its first line not answered, on whichever worker takes it.
      if (await platform.batches.update(batchId, { worker_id: null }, workerId)) await platform.queue.add(batchQueue, { batchId });
      log.warn('batch handed back to the queue: the worker is stopping');
      return;
    }
    log.error({ err }, 'batch failed');
    await finalize(platform, row, workerId, 'failed', `the batch stopped: ${(err as Error).message}`);
  }
}

/** The input file's lines; undefined when the batch ended for it (recorded). */
async function readInput(platform: Platform, row: BatchRow): Promise<BatchLine[] | undefined> {
  const file = await platform.datasets.getRaw(row.user_id, row.input_file_id);
  if (!file && row.status === 'cancelling') {
    // Cancelled, then its input deleted (DELETE /v1/files/{id}?cancel_jobs=true): it ends cancelled, not failed.
    await finalize(platform, row, row.worker_id!, 'cancelled');
    return undefined;
  }
  const read = file
    ? readBatchInput(await text(await platform.blobs.get(file.blob_key)), row.endpoint)
    : { errors: [{ code: 'file_not_found', message: `the input file ${row.input_file_id} was deleted before the batch ran`, param: 'input_file_id', line: null }] };
  if ('lines' in read) return read.lines;
  await platform.batches.update(row.batch_id, { status: 'failed', errors: read.errors, failed_at: new Date(), worker_id: null }, row.worker_id ?? undefined);
  return undefined;
}

/** One chunk's outcomes: each line prepared (or an error line), each group of alike lines generated at once. */
async function answerChunk(platform: Platform, engines: InferenceEngines, row: BatchRow, lines: BatchLine[], signal: AbortSignal): Promise<BatchResultRow[]> {
  const outcomes: BatchResultRow[] = [];
  const prepared: PreparedLine[] = [];
  for (const line of lines) {
    try {
      prepared.push(await prepareBatchLine(platform, row.user_id, row.endpoint, line));
    } catch (err) {
      outcomes.push(failedLine(line, err));
    }
  }
  for (const group of groupLines(prepared)) {
    const first = group[0]!.run.payload;
    const conversations = group.flatMap((p) => p.run.payload.conversations);
    try {
      const { results, details } = await runInference(platform, engines, { ...first, conversations }, signal);
      let from = 0;
      for (const p of group) {
        const n = p.run.payload.conversations.length;
        outcomes.push(answeredLine(p, results.slice(from, from + n), details.slice(from, from + n)));
        from += n;
      }
    } catch (err) {
      if (signal.aborted) throw err;
      outcomes.push(...group.map((p) => failedLine(p.line, err)));
    }
  }
  return outcomes;
}

/** Writes the output and error files of the lines answered, and ends the batch. */
async function finalize(platform: Platform, row: BatchRow, workerId: string, ending: Ending, failure?: string): Promise<void> {
  const batchId = row.batch_id;
  if (ending === 'completed') await platform.batches.update(batchId, { status: 'finalizing', finalizing_at: new Date() }, workerId);
  const results = await platform.batches.results(batchId);
  const write = async (ok: boolean, name: string) => {
    const entries = results.filter((r) => r.ok === ok);
    if (entries.length === 0) return null;
    const lines = entries.map((r) => JSON.stringify(r.result)).join('\n') + '\n';
    const file = await storeUpload(platform, row.user_id, `${batchId}_${name}.jsonl`, Readable.from([Buffer.from(lines)]), undefined, { lenient: true, purpose: 'batch_output' });
    return file.dataset_id;
  };
  const now = new Date();
  await platform.batches.update(batchId, {
    status: ending,
    output_file_id: await write(true, 'output'),
    error_file_id: await write(false, 'error'),
    worker_id: null,
    ...(ending === 'completed' ? { completed_at: now } : ending === 'cancelled' ? { cancelled_at: now } : ending === 'expired' ? { expired_at: now } : { failed_at: now }),
    ...(failure ? { errors: [{ code: 'server_error', message: failure, param: null, line: null }] } : {}),
  }, workerId);
}
