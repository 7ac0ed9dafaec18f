// POST /datasets/upload as a domain function: stream the file into blob storage as uploaded, read it
// back once to describe it, and only then record it. A file that fails to parse is removed again.
import type { Readable } from 'node:stream';
import { newId, type Platform, type RawDatasetRow } from '@ftp/platform';
import { byteSourceFromBlob } from './readers/byte-source.ts';
import { inspectDataset } from './readers/index.ts';
import { rawUploadKey } from './storage-keys.ts';

/** `checkComplete` throws when the stored file is not the whole upload (cut at the size limit). */
export async function storeUpload(
  platform: Platform,
  userId: string,
  filename: string,
  file: Readable,
  checkComplete: () => void = () => undefined,
): Promise<RawDatasetRow> {
  const datasetId = newId('ds');
  const key = rawUploadKey(userId, datasetId, filename);
  const { size } = await platform.blobs.put(key, file);
  try {
    checkComplete();
    const described = await inspectDataset(await byteSourceFromBlob(platform.blobs, key), filename);
    return await platform.datasets.insertRaw({
      dataset_id: datasetId,
      user_id: userId,
      filename,
      format: described.format,
      blob_key: key,
      size_bytes: size,
      num_examples: described.num_examples,
      columns: described.columns,
      sample: described.sample,
    });
  } catch (err) {
    await platform.blobs.delete(key);
    throw err;
  }
}
