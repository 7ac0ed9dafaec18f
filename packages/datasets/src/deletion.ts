// Deleting a dataset, for both faces (DELETE /datasets/{id} on the preprocessing service, DELETE /v1/files/{id}): a
// processed dataset goes with its files and stored evaluations but never the upload it was made from; an upload goes
// with its file but never the processed datasets made from it (they hold their own rows). Work that still needs the
// dataset (decisions.md) is a 409 naming it, unless the caller asks for it to be cancelled first (#54: the delete was
// accepted and the queued job failed later, "no longer exists").
import { Conflict, type BatchRow, type PendingWork, type Platform, type ProcessedDatasetRow, type RawDatasetRow, type SweepRow, type TrainingJobRow } from '@ftp/platform';
import type { DatasetDeleteResult } from '@ftp/schema';
import { CANCELLABLE_STATUSES, cancelSweep, cancelTrainingJob } from '@ftp/jobs/training';
import { cancelBatch } from '@ftp/jobs/openai';
import { evaluateQueue, type EvaluatePayload } from '@ftp/jobs/queues';

/** A dataset of the caller's: processed (pd_…) or an upload (ds_…, a /v1 file). */
export type OwnDataset = { kind: 'processed'; row: ProcessedDatasetRow } | { kind: 'upload'; row: RawDatasetRow };

/** What still needs a dataset. A processed dataset: jobs on it not ended (paused ones resume from it) and evaluations
 *  of it in the evaluate queue. An upload: batches reading it as input, and processed datasets still being made from
 *  it on a worker. A /v1 fine-tuning job copies its files into a processed dataset when it is created, so it needs that
 *  dataset, not the file. */
interface Dependants {
  jobs: TrainingJobRow[];
  /** Sweeps whose trials train on it and that may still submit more. */
  sweeps: SweepRow[];
  evaluations: Array<PendingWork<EvaluatePayload>>;
  batches: BatchRow[];
  processing: ProcessedDatasetRow[];
}

/** The caller's dataset of that id, processed or uploaded; undefined when neither is theirs. */
export async function findOwnDataset(platform: Platform, userId: string, id: string): Promise<OwnDataset | undefined> {
  const processed = await platform.datasets.getProcessed(userId, id);
  if (processed) return { kind: 'processed', row: processed };
  const upload = await platform.datasets.getRaw(userId, id);
  return upload ? { kind: 'upload', row: upload } : undefined;
}

/** Deletes the dataset; what still needs it is a 409 naming it, or with `cancelJobs` is cancelled first. */
export async function deleteDataset(platform: Platform, userId: string, dataset: OwnDataset, options: { cancelJobs: boolean }): Promise<DatasetDeleteResult> {
  const dependants = await dependantsOf(platform, userId, dataset);
  const named = describe(dependants);
  const id = datasetId(dataset);
  if (named.length > 0 && !options.cancelJobs) {
    const them = named.length > 1 ? 'them' : 'it';
    throw new Conflict(`${kindName(dataset)} ${id} is still needed by ${named.join('; ')}. ${advice(dependants)}, or send ?cancel_jobs=true to cancel ${them} and delete the dataset`);
  }
  // A running evaluation and a finalizing batch no longer read it: they finish, and are not said to be cancelled.
  const stopped = describe({ ...dependants, evaluations: dependants.evaluations.filter((w) => w.state === 'waiting'), batches: dependants.batches.filter((b) => b.status !== 'finalizing') });
  const cancelled = stopped.length > 0 ? ` (cancelled first: ${stopped.join('; ')})` : '';
  await cancel(platform, userId, dataset, dependants);
  return dataset.kind === 'processed' ? deleteProcessed(platform, userId, dataset.row, cancelled) : deleteUpload(platform, userId, dataset.row, cancelled);
}

async function deleteProcessed(platform: Platform, userId: string, row: ProcessedDatasetRow, cancelled: string): Promise<DatasetDeleteResult> {
  const id = row.processed_dataset_id;
  // Row first: if removing files fails part-way, nothing points at the rest and a retry is harmless.
  await platform.datasets.deleteProcessed(userId, id);
  const evaluations = await platform.evaluations.deleteFor(userId, { processedDatasetId: id });
  const comparisons = await platform.comparisons.deleteFor(userId, { processedDatasetId: id });
  const files = await platform.blobs.deletePrefix(row.blob_prefix);
  const source = row.dataset_source === 'upload' ? `the upload ${row.dataset_id} was kept` : `its source, hub dataset ${row.dataset_id}, is not stored here`;
  return {
    dataset_name: row.dataset_name,
    deleted: true,
    message: `processed dataset ${id} and its ${files.length} files were deleted; ${source}${cancelled}`,
    deleted_files_count: files.length,
    deleted_resources: [`processed_datasets/${id}`, ...files.map((key) => platform.blobs.uri(key)), ...evaluations.map((e) => `evaluations/${e}`), ...comparisons.map((c) => `comparisons/${c}`)],
  };
}

async function deleteUpload(platform: Platform, userId: string, row: RawDatasetRow, cancelled: string): Promise<DatasetDeleteResult> {
  const id = row.dataset_id;
  const kept = (await platform.datasets.listProcessedFrom(userId, id)).map((d) => d.processed_dataset_id);
  await platform.datasets.deleteRaw(userId, id);
  await platform.blobs.delete(row.blob_key);
  const keptSentence =
    kept.length === 0 ? 'no processed dataset was made from it'
    : kept.length === 1 ? `the processed dataset made from it, ${kept[0]}, was kept`
    : `the ${kept.length} processed datasets made from it were kept`;
  return {
    dataset_name: row.filename,
    deleted: true,
    message: `upload ${id} (${row.filename}) and its file were deleted; ${keptSentence}${cancelled}`,
    deleted_files_count: 1,
    deleted_resources: [`raw_datasets/${id}`, platform.blobs.uri(row.blob_key)],
    kept_processed_datasets: kept,
  };
}

async function dependantsOf(platform: Platform, userId: string, dataset: OwnDataset): Promise<Dependants> {
  if (dataset.kind === 'processed') {
    const id = dataset.row.processed_dataset_id;
    const pending = await platform.queue.pending(evaluateQueue);
    return {
      jobs: await platform.jobs.listOnDataset(userId, id, CANCELLABLE_STATUSES),
      sweeps: await platform.sweeps.listUnfinishedOnDataset(userId, id),
      // The evaluate lane also grades (no dataset); an evaluation names its dataset in its request.
      evaluations: pending.filter((w): w is PendingWork<EvaluatePayload> => 'request' in w.payload && w.payload.userId === userId && w.payload.request.dataset_id === id),
      batches: [],
      processing: [],
    };
  }
  const id = dataset.row.dataset_id;
  return {
    jobs: [],
    sweeps: [],
    evaluations: [],
    batches: await platform.batches.listUnfinishedReading(userId, id),
    processing: (await platform.datasets.listProcessedFrom(userId, id)).filter((d) => d.status === 'processing'),
  };
}

/** Cancels what needs the dataset, each as its own cancel endpoint does. An evaluation a worker already runs has read
 *  its rows and finishes; one still waiting is dropped (its caller is answered 503). A dataset still being made from
 *  the upload fails; its worker stops at its next progress report and drops what it wrote. */
async function cancel(platform: Platform, userId: string, dataset: OwnDataset, dependants: Dependants): Promise<void> {
  for (const sweep of dependants.sweeps) await ignoreEnded(async () => void (await cancelSweep(platform, userId, sweep.sweep_id)));
  for (const job of dependants.jobs) await ignoreEnded(() => cancelTrainingJob(platform, userId, job.job_id));
  for (const work of dependants.evaluations) if (work.state === 'waiting') await platform.queue.discard(evaluateQueue, work.id);
  // A finalizing batch no longer reads its input; only validating and in-progress ones can be cancelled.
  for (const batch of dependants.batches) if (batch.status !== 'finalizing') await ignoreEnded(() => cancelBatch(platform, userId, batch.batch_id));
  for (const row of dependants.processing) {
    if (await platform.datasets.failProcessing(row.processed_dataset_id, null, `cancelled by user: its upload ${datasetId(dataset)} was deleted while it was processed`)) {
      await platform.secrets.drop(row.processed_dataset_id);
    }
  }
}

/** A job or batch that ended between the check and its cancel needs nothing any more. */
async function ignoreEnded(cancelIt: () => Promise<void>): Promise<void> {
  await cancelIt().catch((err: unknown) => {
    if (!(err instanceof Conflict)) throw err;
  });
}

function describe(d: Dependants): string[] {
  const waiting = d.evaluations.filter((w) => w.state === 'waiting').length;
  const running = d.evaluations.length - waiting;
  return [
    ...d.sweeps.map((w) => `sweep ${w.sweep_id} (${w.status}), whose trials train on it`),
    ...d.jobs.map((j) => `training job ${j.job_id} (${j.status})`),
    ...(waiting > 0 ? [`${waiting === 1 ? 'an evaluation' : `${waiting} evaluations`} waiting for a worker`] : []),
    ...(running > 0 ? [`${running === 1 ? 'an evaluation' : `${running} evaluations`} running`] : []),
    ...d.batches.map((b) => `batch ${b.batch_id} (${b.status}), which reads it as its input`),
    ...d.processing.map((p) => `processed dataset ${p.processed_dataset_id}, still being made from it`),
  ];
}

/** What the caller can do instead of cancel_jobs: each cancel endpoint, or wait for the work that has none. */
function advice(d: Dependants): string {
  const cancels = [...d.sweeps.map((w) => `POST /sweeps/${w.sweep_id}/cancel`), ...d.jobs.map((j) => `POST /jobs/${j.job_id}/cancel`), ...d.batches.map((b) => `POST /v1/batches/${b.batch_id}/cancel`)];
  const waits = d.evaluations.length + d.processing.length > 0;
  if (cancels.length === 0) return `Wait for ${d.evaluations.length + d.processing.length > 1 ? 'them' : 'it'} to finish`;
  return `Cancel first (${cancels.join(', ')})${waits ? ' and wait for the rest to finish' : ''}`;
}

function datasetId(dataset: OwnDataset): string {
  return dataset.kind === 'processed' ? dataset.row.processed_dataset_id : dataset.row.dataset_id;
}

function kindName(dataset: OwnDataset): string {
  return dataset.kind === 'processed' ? 'processed dataset' : 'upload';
}
