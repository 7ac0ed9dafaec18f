// A model-hub dataset as a processing source: its splits' files are read over HTTP range requests,
// one after another; columns come from the first rows of each split.
import type { Config } from '@ftp/platform';
import { resolveHubDataset, type HubDataFile } from '../hub/resolve-dataset.ts';
import { readRowBatches } from '../readers/index.ts';
import type { DatasetRow } from '../readers/rows.ts';
import type { DatasetSource, SourceSplit } from './sources.ts';

async function* fileBatches(files: HubDataFile[]): AsyncGenerator<DatasetRow[]> {
  for (const file of files) yield* readRowBatches(file.source, file.format);
}

async function firstBatch(files: HubDataFile[]): Promise<DatasetRow[]> {
  for await (const batch of fileBatches(files)) if (batch.length > 0) return batch;
  return [];
}

export async function hubSource(config: Config, repoId: string, subset: string): Promise<DatasetSource> {
  const dataset = await resolveHubDataset({
    endpoint: config.HF_ENDPOINT,
    token: config.HF_TOKEN,
    repoId,
    subset,
    timeoutMs: config.HUB_TIMEOUT_MS,
  });
  const columns: string[] = [];
  const seen = new Set<string>();
  for (const split of dataset.splits) {
    for (const row of await firstBatch(split.files)) {
      for (const key of Object.keys(row)) if (!seen.has(key)) seen.add(key) && columns.push(key);
    }
  }
  const splits: SourceSplit[] = dataset.splits.map((split) => {
    let counted: Promise<number> | undefined;
    return {
      name: split.name,
      numRows: () =>
        (counted ??= (async () => {
          let n = 0;
          for await (const batch of fileBatches(split.files)) n += batch.length;
          return n;
        })()),
      batches: () => fileBatches(split.files),
    };
  });
  return { columns, splits };
}
