// POST /datasets/upload as a domain function: stream the file into blob storage as uploaded, read it
// back once to describe it, and only then record it. A file that fails to parse is removed again.
import type { Readable } from 'node:stream';
import { BadRequest, invalidField, newId, PayloadTooLarge, type Platform, type RawDatasetRow } from '@ftp/platform';
import { byteSourceFromBlob } from './readers/byte-source.ts';
import { inspectDataset } from './readers/index.ts';
import { numberedLines } from './readers/lines.ts';
import { rawUploadKey } from './storage-keys.ts';

/** `checkComplete` throws when the stored file is not the whole upload (cut at the size limit). `lenient` (the /v1
 *  files, which OpenAI checks line by line when a job uses them, so that a job can report the bad line) keeps a JSON
 *  lines file that does not parse, described by its line count alone. */
export async function storeUpload(
  platform: Platform,
  userId: string,
  filename: string,
  file: Readable,
  checkComplete: () => void = () => undefined,
  options: { lenient?: boolean } = {},
): Promise<RawDatasetRow> {
  const datasetId = newId('ds');
  const key = rawUploadKey(userId, datasetId, filename);
  const { size } = await platform.blobs.put(key, file);
  try {
    checkComplete();
    const described = await inspectDataset(await byteSourceFromBlob(platform.blobs, key), filename).catch(async (err: unknown) => {
      if (!(options.lenient && err instanceof BadRequest)) throw err;
      return { format: 'jsonl', columns: [], sample: [], num_examples: await countLines(platform, key) };
    });
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

/** Non-empty lines; a line over the row limit is refused here as in every reader (a 400, and the file removed). */
async function countLines(platform: Platform, key: string): Promise<number> {
  let lines = 0;
  for await (const line of numberedLines(await platform.blobs.get(key))) if (line.text.trim()) lines += 1;
  return lines;
}

/** A file part of a multipart request, as @fastify/multipart hands it over (only what is used here). */
export interface UploadPart {
  filename: string;
  file: Readable & { truncated: boolean };
}

/** Stores a multipart file part within MAX_UPLOAD_BYTES: @fastify/multipart only truncates a file at the limit (and
 *  may have done so before the part is handed over), so the stream is failed when that happens later and the flag is
 *  checked once the file is stored; either way a 413, and nothing is kept. */
export async function storeUploadPart(platform: Platform, userId: string, part: UploadPart, options: { lenient?: boolean } = {}): Promise<RawDatasetRow> {
  if (part.filename.includes('\u0000')) {
    part.file.resume();
    // PostgreSQL cannot store U+0000; the name is refused before any byte is stored.
    throw invalidField(['body', 'file'], 'the file name must not contain the NUL character (U+0000); rename the file', 'string_pattern_mismatch');
  }
  const tooLarge = () => new PayloadTooLarge(`the file is larger than MAX_UPLOAD_BYTES (${platform.config.MAX_UPLOAD_BYTES} bytes); split it or raise the limit`);
  part.file.once('limit', () => part.file.destroy(tooLarge()));
  const checkComplete = () => {
    if (part.file.truncated) throw tooLarge();
  };
  return storeUpload(platform, userId, part.filename || 'upload', part.file, checkComplete, options);
}
