// POST /datasets/process as a domain function: check the request against the source, plan the splits,
// stream every row through the record builder into one JSONL blob per split, then record the row.
// Any failure removes what was written, so a half-processed dataset is never listed.
import {
  invalidField, newId, UnprocessableEntity,
  type Config, type FinishedProcessing, type NewProcessedDatasetRow, type Platform, type ProcessedDatasetRow, type StoredSplit, type ValidationIssue,
} from '@ftp/platform';
import type { DatasetProgress, ProcessDatasetRequest, SplitConfig } from '@ftp/schema';
import { compileRecordBuilder, echoedTurnIssues, echoesUser, type RecordBuilder } from './records.ts';
import { createImageResolver } from './images.ts';
import { planSplit, TEST, TRAIN } from './splits.ts';
import { SplitWriter } from './split-writer.ts';
import type { DatasetSource, SourceSplit } from './sources.ts';
import { processedPrefix } from '../storage-keys.ts';
import { llmMethodsOf, switchOf, trainAugmenter, type LlmMethod, type TrainAugmenter } from '../augmentation/augment.ts';
import type { LlmClient } from '../augmentation/llm.ts';

const SPLIT_CONFIG_LOC = ['body', 'config', 'split_config'];
const SPLIT_NAMES: Record<number, string> = { [TRAIN]: 'train', [TEST]: 'test' };

/** Which source split(s) feed which output split, decided before any row is read. */
type Route = { source: SourceSplit; assign: (index: number) => number };

function findSplit(source: DatasetSource, name: string, field: string): SourceSplit {
  const split = source.splits.find((s) => s.name === name);
  if (!split) {
    throw invalidField(
      [...SPLIT_CONFIG_LOC, field],
      `split ${JSON.stringify(name)} does not exist; the dataset has: ${source.splits.map((s) => s.name).join(', ')}`,
      'unknown_split',
    );
  }
  return split;
}

/** The routes, and how many rows `train` gets (what augmentation spreads its new rows over). */
async function planRoutes(source: DatasetSource, config: SplitConfig): Promise<{ routes: Route[]; trainRows: number }> {
  if (config.type === 'hub_split') {
    const train = findSplit(source, config.train_split, 'train_split');
    const test = findSplit(source, config.test_split, 'test_split');
    if (train === test) {
      throw invalidField([...SPLIT_CONFIG_LOC, 'test_split'], 'test_split must differ from train_split', 'value_error');
    }
    const routes = [
      { source: train, assign: () => TRAIN },
      { source: test, assign: () => TEST },
    ];
    return { routes, trainRows: await train.numRows() };
  }
  const chosen = config.split ? findSplit(source, config.split, 'split') : source.splits[0]!;
  const plan = planSplit({
    numRows: await chosen.numRows(),
    sampleSize: config.sample_size,
    testSize: config.type === 'manual_split' ? config.test_size : undefined,
    loc: SPLIT_CONFIG_LOC,
  });
  return { routes: [{ source: chosen, assign: (i) => plan.assignment[i] ?? 0 }], trainRows: plan.trainRows };
}

/** The LLM methods a request switches on need LLM_API_BASE, LLM_MODEL and a key: a 422 naming each one missing,
 *  before any work. */
export function checkLlmSettings(config: Config, request: ProcessDatasetRequest): LlmMethod[] {
  const augmentation = request.config.augmentation_config;
  const methods = llmMethodsOf(augmentation);
  if (methods.length === 0 || !augmentation) return [];
  const loc = ['body', 'config', 'augmentation_config'];
  const asked = methods.map(switchOf).join(', ');
  const issues: ValidationIssue[] = [];
  if (!config.LLM_API_BASE || !config.LLM_MODEL) {
    const unset = [!config.LLM_API_BASE && 'LLM_API_BASE', !config.LLM_MODEL && 'LLM_MODEL'].filter(Boolean).join(' and ');
    issues.push({
      loc: [...loc, switchOf(methods[0]!)],
      msg: `${asked} need${methods.length === 1 ? 's' : ''} a language-model service, and this server has no ${unset}: set ${unset} (an OpenAI-compatible chat API and its model) in the environment of the preprocessing service and the workers, or switch ${asked} off`,
      type: 'not_configured',
    });
  }
  if (!augmentation.llm_api_key) {
    issues.push({ loc: [...loc, 'llm_api_key'], msg: `${asked} need${methods.length === 1 ? 's' : ''} llm_api_key, the key of the service at LLM_API_BASE`, type: 'missing' });
  }
  if (methods.includes('synthesis') && !augmentation.synthesis_ratio) {
    issues.push({ loc: [...loc, 'synthesis_ratio'], msg: 'use_synthesis needs synthesis_ratio (new conversations as a fraction of the train rows, e.g. 0.5)', type: 'missing' });
  }
  if (issues.length > 0) throw new UnprocessableEntity(issues);
  return methods;
}

/** The config as stored: the LLM credential is used for this request only and never written down. */
function storableConfig(request: ProcessDatasetRequest): Record<string, unknown> {
  const { augmentation_config: augmentation, ...rest } = request.config;
  return augmentation ? { ...rest, augmentation_config: { ...augmentation, llm_api_key: undefined } } : rest;
}

/** A checked request: its record builder, which source rows go to which split, and the row it becomes. */
interface ProcessingPlan {
  request: ProcessDatasetRequest;
  fields: ProcessedDatasetFields;
  builder: RecordBuilder;
  routes: Route[];
  trainRows: number;
  /** Source rows read, over every route. */
  totalRows: number;
  splitNames: string[];
}

/** Checks the request against the source (mappings, splits) and plans the work; writes nothing. */
async function planProcessing(platform: Platform, userId: string, request: ProcessDatasetRequest, source: DatasetSource, processedDatasetId: string): Promise<ProcessingPlan> {
  const builder = compileRecordBuilder({
    mode: request.processing_mode,
    mappings: request.config.field_mappings,
    columns: source.columns,
    normalize: request.config.normalize_whitespace,
    resolveImage: createImageResolver(platform.blobs, processedPrefix(userId, processedDatasetId)),
  });
  const { routes, trainRows } = await planRoutes(source, request.config.split_config);
  const fields = {
    processed_dataset_id: processedDatasetId,
    dataset_id: request.dataset_id,
    dataset_name: request.dataset_name,
    dataset_subset: request.dataset_subset,
    dataset_source: request.dataset_source,
    processing_mode: request.processing_mode,
    modality: builder.modality,
    config: storableConfig(request),
    columns: source.columns,
  };
  const splitNames = request.config.split_config.type === 'no_split' ? ['train'] : ['train', 'test'];
  const totalRows = (await Promise.all(routes.map((r) => r.source.numRows()))).reduce((a, b) => a + b, 0);
  return { request, fields, builder, routes, trainRows, totalRows, splitNames };
}

/** Where a run is: source rows read of all, and the new rows each method made. */
export type ProcessingProgress = DatasetProgress;

/** Every record of the plan, in order: each train row followed by its new rows, then the rows synthesis adds. */
function fillSplits(plan: ProcessingPlan, augmenter: TrainAugmenter | undefined, onProgress?: (progress: ProcessingProgress) => Promise<void>): SplitRecords {
  const { builder, routes, splitNames, totalRows: total } = plan;
  return async (write) => {
    let done = 0;
    let trainPosition = 0;
    let built = 0; // source rows made into records, and those whose assistant turn repeats the user turn
    let echoed = 0;
    for (const route of routes) {
      let index = 0;
      for await (const batch of route.source.batches()) {
        // The new rows of a batch are asked for at once (the LLM client bounds how many run), written in order.
        const rows = batch.map((sourceRow) => {
          const target = SPLIT_NAMES[route.assign(index)];
          index += 1;
          const kept = target !== undefined && splitNames.includes(target);
          const variants = kept && target === 'train' && augmenter ? augmenter.variants(sourceRow, trainPosition++, index - 1) : undefined;
          variants?.catch(() => undefined); // awaited below, in order; a failure must not go unhandled meanwhile
          return { sourceRow, target: kept ? target : undefined, rowNumber: index, variants };
        });
        for (const { sourceRow, target, rowNumber, variants } of rows) {
          done += 1;
          if (!target) continue;
          const record = await builder.build(sourceRow, rowNumber);
          built += 1;
          if (echoesUser(record)) echoed += 1;
          await write(target, record);
          // New rows follow their source row; the test split is never augmented.
          for (const variant of (await variants) ?? []) {
            await write(target, { ...(await builder.build(variant.row, rowNumber)), metadata: variant.metadata });
          }
          // Per row: a language model takes seconds a row (the worker writes it to the row at most once a second).
          if (variants) await onProgress?.({ done, total, by_method: augmenter?.made() ?? {} });
        }
        await onProgress?.({ done, total, by_method: augmenter?.made() ?? {} });
      }
    }
    // Different mappings can still say the same thing in every row (a template around the column, or whitespace that
    // normalisation removes); known only once every row is read, and what was written is removed with the 422.
    if (built > 0 && echoed === built) throw new UnprocessableEntity(echoedTurnIssues(plan.fields.columns));
    for (const variant of (await augmenter?.closing()) ?? []) {
      await write('train', { ...(await builder.build(variant.row, variant.metadata.source_index + 1)), metadata: variant.metadata });
    }
    await onProgress?.({ done, total, by_method: augmenter?.made() ?? {} });
  };
}

const augmenterOf = (plan: ProcessingPlan, llm?: LlmClient): TrainAugmenter | undefined =>
  plan.request.config.augmentation_config
    ? trainAugmenter({
        config: plan.request.config.augmentation_config,
        columns: { augmentable: plan.builder.augmentableColumns, user: plan.builder.userColumns },
        trainRows: plan.trainRows,
        llm,
      })
    : undefined;

/** Whether the request needs a worker (an LLM augmentation method is on) or is answered at once. */
export const needsWorker = (request: ProcessDatasetRequest): boolean => llmMethodsOf(request.config.augmentation_config).length > 0;

/** A new request checked (LLM settings included) and planned. */
async function checkedPlan(platform: Platform, userId: string, request: ProcessDatasetRequest, source: DatasetSource): Promise<ProcessingPlan> {
  checkLlmSettings(platform.config, request);
  return planProcessing(platform, userId, request, source, newId('pd'));
}

/** POST /datasets/process without an LLM method: every split written and the row recorded, ready. */
export async function processDataset(
  platform: Platform,
  userId: string,
  request: ProcessDatasetRequest,
  source: DatasetSource,
): Promise<ProcessedDatasetRow> {
  const plan = await checkedPlan(platform, userId, request, source);
  const augmenter = augmenterOf(plan);
  return writeProcessedDataset(platform, userId, plan.fields, plan.splitNames, fillSplits(plan, augmenter), () => augmenter?.report());
}

/** POST /datasets/process with an LLM method: the request checked, its row recorded as processing (no splits yet)
 *  for a worker to finish (runProcessing); the caller queues it. */
export async function beginProcessing(
  platform: Platform,
  userId: string,
  request: ProcessDatasetRequest,
  source: DatasetSource,
): Promise<ProcessedDatasetRow> {
  const plan = await checkedPlan(platform, userId, request, source);
  return platform.datasets.insertProcessed({
    ...plan.fields,
    user_id: userId,
    splits: [],
    num_examples: 0,
    blob_prefix: processedPrefix(userId, plan.fields.processed_dataset_id),
    status: 'processing',
    progress: { done: 0, total: plan.totalRows, by_method: {} },
  });
}

/** The request a stored row was made from (its LLM key is not in it: that comes sealed). */
export function requestOf(row: ProcessedDatasetRow): ProcessDatasetRequest {
  return {
    dataset_name: row.dataset_name,
    dataset_id: row.dataset_id,
    dataset_source: row.dataset_source,
    dataset_subset: row.dataset_subset,
    processing_mode: row.processing_mode,
    config: row.config as ProcessDatasetRequest['config'],
  };
}

/** A worker's part of a processing dataset: read the source again, write every split with the augmentation the row
 *  asks for, and return what the row records when it becomes ready. Whatever an earlier attempt left under the row's
 *  prefix is removed first; on failure what this one wrote is removed. */
export async function runProcessing(
  platform: Platform,
  row: ProcessedDatasetRow,
  source: DatasetSource,
  options: { llm: LlmClient; onProgress: (progress: ProcessingProgress) => Promise<void> },
): Promise<FinishedProcessing> {
  const request = requestOf(row);
  await platform.blobs.deletePrefix(row.blob_prefix);
  const plan = await planProcessing(platform, row.user_id, request, source, row.processed_dataset_id);
  const augmenter = augmenterOf(plan, options.llm);
  let last: ProcessingProgress | undefined;
  const splits = await writeSplits(platform, row.blob_prefix, plan.splitNames, fillSplits(plan, augmenter, async (progress) => {
    last = progress;
    await options.onProgress(progress);
  }));
  return { splits, num_examples: splits.reduce((n, s) => n + s.num_rows, 0), augmentation: augmenter?.report() ?? null, progress: last ?? null };
}

/** What a processed dataset is, apart from what writing its splits decides (augmentation counts included). */
export type ProcessedDatasetFields = Omit<NewProcessedDatasetRow, 'user_id' | 'splits' | 'num_examples' | 'blob_prefix' | 'augmentation'>;

/** Records go to the split named; a name not given to writeProcessedDataset is an error. */
export type SplitRecords = (write: (split: string, record: Record<string, unknown>) => Promise<void>) => Promise<void>;

/** Streams the records `fill` produces into one JSONL blob per split under `prefix`. Any failure removes what was
 *  written. */
async function writeSplits(platform: Platform, prefix: string, splitNames: readonly string[], fill: SplitRecords): Promise<StoredSplit[]> {
  const writers = new Map(splitNames.map((name) => [name, new SplitWriter(platform.blobs, name, `${prefix}${name}.jsonl`)]));
  try {
    await fill(async (split, record) => {
      const writer = writers.get(split);
      if (!writer) throw new Error(`no split ${split} is being written`);
      await writer.write(record);
    });
    for (const writer of writers.values()) await writer.finish();
  } catch (err) {
    await Promise.all([...writers.values()].map((w) => w.abort(err as Error)));
    await platform.blobs.deletePrefix(prefix);
    throw err;
  }
  return [...writers.values()].map((w) => ({ split_name: w.splitName, num_rows: w.numRows, blob_key: w.key, samples: w.samples }));
}

/** Streams the records `fill` produces into one JSONL blob per split, then records the row. Any failure removes what
 *  was written, so a half-processed dataset is never listed. Both /datasets/process and the /v1 jobs' files use it. */
export async function writeProcessedDataset(
  platform: Platform,
  userId: string,
  fields: ProcessedDatasetFields,
  splitNames: readonly string[],
  fill: SplitRecords,
  /** What augmentation did, once every record is written. */
  augmentation?: () => NewProcessedDatasetRow['augmentation'],
): Promise<ProcessedDatasetRow> {
  const prefix = processedPrefix(userId, fields.processed_dataset_id);
  const splits = await writeSplits(platform, prefix, splitNames, fill);
  try {
    return await platform.datasets.insertProcessed({
      ...fields,
      augmentation: augmentation?.() ?? null,
      user_id: userId,
      splits,
      num_examples: splits.reduce((n, s) => n + s.num_rows, 0),
      blob_prefix: prefix,
    });
  } catch (err) {
    await platform.blobs.deletePrefix(prefix);
    throw err;
  }
}
