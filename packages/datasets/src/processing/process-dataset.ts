// POST /datasets/process as a domain function: check the request against the source, plan the splits,
// stream every row through the record builder into one JSONL blob per split, then record the row.
// Any failure removes what was written, so a half-processed dataset is never listed.
import { invalidField, newId, UnprocessableEntity, type NewProcessedDatasetRow, type Platform, type ProcessedDatasetRow, type StoredSplit } from '@ftp/platform';
import type { ProcessDatasetRequest, SplitConfig } from '@ftp/schema';
import { compileRecordBuilder } from './records.ts';
import { createImageResolver } from './images.ts';
import { planSplit, TEST, TRAIN } from './splits.ts';
import { SplitWriter } from './split-writer.ts';
import type { DatasetSource, SourceSplit } from './sources.ts';
import { processedPrefix } from '../storage-keys.ts';
import { edaAugmenter } from '../augmentation/augment.ts';

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

/** The methods that need a language-model service are not built yet. */
function rejectLlmAugmentation(request: ProcessDatasetRequest): void {
  const augmentation = request.config.augmentation_config;
  if (!augmentation) return;
  const on = (['use_back_translation', 'use_paraphrasing', 'use_synthesis'] as const).filter((k) => augmentation[k]);
  if (on.length > 0) {
    throw new UnprocessableEntity(
      on.map((k) => ({
        loc: ['body', 'config', 'augmentation_config', k],
        msg: `augmentation is not available yet in this version; set ${k} to false`,
        type: 'not_available',
      })),
    );
  }
}

/** The config as stored: the LLM credential is used for this request only and never written down. */
function storableConfig(request: ProcessDatasetRequest): Record<string, unknown> {
  const { augmentation_config: augmentation, ...rest } = request.config;
  return augmentation ? { ...rest, augmentation_config: { ...augmentation, llm_api_key: undefined } } : rest;
}

export async function processDataset(
  platform: Platform,
  userId: string,
  request: ProcessDatasetRequest,
  source: DatasetSource,
): Promise<ProcessedDatasetRow> {
  rejectLlmAugmentation(request);
  const processedDatasetId = newId('pd');
  const builder = compileRecordBuilder({
    mode: request.processing_mode,
    mappings: request.config.field_mappings,
    columns: source.columns,
    normalize: request.config.normalize_whitespace,
    resolveImage: createImageResolver(platform.blobs, processedPrefix(userId, processedDatasetId)),
  });
  const { routes, trainRows } = await planRoutes(source, request.config.split_config);
  const augmentation = request.config.augmentation_config;
  const augmenter = augmentation?.use_eda
    ? edaAugmenter({ columns: builder.augmentableColumns, trainRows, newRows: Math.round((augmentation.augmentation_factor - 1) * trainRows) })
    : undefined;
  const splitNames = request.config.split_config.type === 'no_split' ? ['train'] : ['train', 'test'];
  const row = {
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
  let trainPosition = 0;
  return writeProcessedDataset(platform, userId, row, splitNames, async (write) => {
    for (const route of routes) {
      let index = 0;
      for await (const batch of route.source.batches()) {
        for (const sourceRow of batch) {
          const target = SPLIT_NAMES[route.assign(index)];
          index += 1;
          if (!target || !splitNames.includes(target)) continue;
          await write(target, await builder.build(sourceRow, index));
          if (target !== 'train' || !augmenter) continue;
          // New rows follow their source row; the test split is never augmented.
          for (const variant of augmenter.variants(sourceRow, trainPosition, index - 1)) {
            await write(target, { ...(await builder.build(variant.row, index)), metadata: variant.metadata });
          }
          trainPosition += 1;
        }
      }
    }
  }, () => augmenter?.report());
}

/** What a processed dataset is, apart from what writing its splits decides (augmentation counts included). */
export type ProcessedDatasetFields = Omit<NewProcessedDatasetRow, 'user_id' | 'splits' | 'num_examples' | 'blob_prefix' | 'augmentation'>;

/** Records go to the split named; a name not given to writeProcessedDataset is an error. */
export type SplitRecords = (write: (split: string, record: Record<string, unknown>) => Promise<void>) => Promise<void>;

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

  const splits: StoredSplit[] = [...writers.values()].map((w) => ({
    split_name: w.splitName,
    num_rows: w.numRows,
    blob_key: w.key,
    samples: w.samples,
  }));
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
