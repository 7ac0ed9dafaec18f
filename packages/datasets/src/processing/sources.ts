// Where processing reads rows from: an upload of the caller, or a dataset on the model hub. Both look
// the same to processDataset: column names, and named splits that stream rows in batches.
import { NotFound, type Platform } from '@ftp/platform';
import { byteSourceFromBlob } from '../readers/byte-source.ts';
import { readRowBatches } from '../readers/index.ts';
import type { DatasetFormat } from '../readers/detect.ts';
import type { DatasetRow } from '../readers/rows.ts';

export interface SourceSplit {
  name: string;
  /** Exact row count; may cost a pass over the data when the format does not record it. */
  numRows(): Promise<number>;
  batches(): AsyncIterable<DatasetRow[]>;
}

export interface DatasetSource {
  columns: string[];
  splits: SourceSplit[];
}

/** An upload is one split, `train`, whose row count was measured at upload time. */
export async function uploadSource(platform: Platform, userId: string, datasetId: string): Promise<DatasetSource> {
  const raw = await platform.datasets.getRaw(userId, datasetId);
  if (!raw) throw new NotFound('uploaded dataset', datasetId);
  const bytes = await byteSourceFromBlob(platform.blobs, raw.blob_key);
  return {
    columns: raw.columns,
    splits: [
      {
        name: 'train',
        numRows: async () => raw.num_examples,
        // Read as at upload: the delimiter it was read with then (given or detected), the encoding its bytes show.
        batches: () => readRowBatches(bytes, raw.format as DatasetFormat, { delimiter: raw.delimiter ?? undefined }),
      },
    ],
  };
}

/** The source a processing request names: the caller's upload, or a model-hub dataset. The hub client is loaded on
 *  first use: it costs ~25 MB of memory a server without hub datasets never needs. */
export async function datasetSource(
  platform: Platform,
  userId: string,
  request: { dataset_source: 'upload' | 'hub'; dataset_id: string; dataset_subset: string },
): Promise<DatasetSource> {
  if (request.dataset_source === 'upload') return uploadSource(platform, userId, request.dataset_id);
  return (await import('./hub-source.ts')).hubSource(platform.config, request.dataset_id, request.dataset_subset);
}
