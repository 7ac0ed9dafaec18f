// POST /datasets/process as a domain function: check the request against the source, plan the splits,
// stream every row through the record builder into one JSONL blob per split, then record the row.
// Any failure removes what was written, so a half-processed dataset is never listed.
import { invalidField, newId, UnprocessableEntity, type Platform, type ProcessedDatasetRow, type StoredSplit } from '@ftp/platform';
import type { ProcessDatasetRequest, SplitConfig } from '@ftp/schema';
import { compileRecordBuilder } from './records.ts';
import { createImageResolver } from './images.ts';
import { planSplit, TEST, TRAIN } from './splits.ts';
import { SplitWriter } from './split-writer.ts';
import type { DatasetSource, SourceSplit } from './sources.ts';
import { processedPrefix } from '../storage-keys.ts';

const SPLIT_CONFIG_LOC = ['body', 'config', 'split_config'];

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

async function planRoutes(source: DatasetSource, config: SplitConfig): Promise<Route[]> {
  if (config.type === 'hub_split') {
    const train = findSplit(source, config.train_split, 'train_split');
    const test = findSplit(source, config.test_split, 'test_split');
    if (train === test) {
      throw invalidField([...SPLIT_CONFIG_LOC, 'test_split'], 'test_split must differ from train_split', 'value_error');
    }
    return [
      { source: train, assign: () => TRAIN },
      { source: test, assign: () => TEST },
    ];
  }
  const chosen = config.split ? findSplit(source, config.split, 'split') : source.splits[0]!;
  const plan = planSplit({
    numRows: await chosen.numRows(),
    sampleSize: config.sample_size,
    testSize: config.type === 'manual_split' ? config.test_size : undefined,
    loc: SPLIT_CONFIG_LOC,
  });
  return [{ source: chosen, assign: (i) => plan.assignment[i] ?? 0 }];
}

function rejectAugmentation(request: ProcessDatasetRequest): void {
  const augmentation = request.config.augmentation_config;
  if (!augmentation) return;
  const on = (['use_eda', 'use_back_translation', 'use_paraphrasing', 'use_synthesis'] as const).filter((k) => augmentation[k]);
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
  rejectAugmentation(request);
  const processedDatasetId = newId('pd');
  const prefix = processedPrefix(userId, processedDatasetId);
  const builder = compileRecordBuilder({
    mode: request.processing_mode,
    mappings: request.config.field_mappings,
    columns: source.columns,
    normalize: request.config.normalize_whitespace,
    resolveImage: createImageResolver(platform.blobs, prefix),
  });
  const routes = await planRoutes(source, request.config.split_config);
  const hasTest = request.config.split_config.type !== 'no_split';
  const writers = new Map<number, SplitWriter>([[TRAIN, new SplitWriter(platform.blobs, 'train', `${prefix}train.jsonl`)]]);
  if (hasTest) writers.set(TEST, new SplitWriter(platform.blobs, 'test', `${prefix}test.jsonl`));

  try {
    for (const route of routes) {
      let index = 0;
      for await (const batch of route.source.batches()) {
        for (const row of batch) {
          const target = writers.get(route.assign(index));
          index += 1;
          if (!target) continue;
          const record = builder.build(row, index);
          await target.write(record instanceof Promise ? await record : record);
        }
      }
    }
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
      processed_dataset_id: processedDatasetId,
      user_id: userId,
      dataset_id: request.dataset_id,
      dataset_name: request.dataset_name,
      dataset_subset: request.dataset_subset,
      dataset_source: request.dataset_source,
      processing_mode: request.processing_mode,
      modality: builder.modality,
      config: storableConfig(request),
      splits,
      num_examples: splits.reduce((n, s) => n + s.num_rows, 0),
      columns: source.columns,
      blob_prefix: prefix,
    });
  } catch (err) {
    await platform.blobs.deletePrefix(prefix);
    throw err;
  }
}
