// POST /datasets/upload as a domain function: stream the file into blob storage as uploaded, read it
// back once to describe it, and only then record it. A file that fails to parse is removed again.
// Receiving and recording are two steps, so that a request may send its form fields (the delimiter) after the file.
import type { Readable } from 'node:stream';
import { BadRequest, invalidField, newId, PayloadTooLarge, type FilePurposeColumn, type Platform, type RawDatasetRow } from '@ftp/platform';
import { DELIMITERS, type Delimiter } from '@ftp/schema';
import { byteSourceFromBlob } from './readers/byte-source.ts';
import { inspectDataset, type DatasetInspection } from './readers/index.ts';
import { numberedLines } from './readers/lines.ts';
import { rawUploadKey } from './storage-keys.ts';

/** An upload's bytes in blob storage, not yet described or recorded. */
export interface ReceivedUpload {
  datasetId: string;
  filename: string;
  key: string;
  size: number;
}

/** `lenient` (the /v1 files, which OpenAI checks line by line when a job uses them, so that a job can report the bad
 *  line) keeps a JSON lines file that does not parse, described by its line count alone. `delimiter` chooses the
 *  delimiter of a CSV or TSV file instead of detecting it. */
export interface UploadOptions {
  lenient?: boolean;
  delimiter?: Delimiter;
  /** What the /v1 file is for (default fine-tune). */
  purpose?: FilePurposeColumn;
}

/** Streams `file` into blob storage. `checkComplete` throws when the stored file is not the whole upload (cut at the
 *  size limit); then nothing is kept. */
export async function receiveUpload(
  platform: Platform,
  userId: string,
  filename: string,
  file: Readable,
  checkComplete: () => void = () => undefined,
): Promise<ReceivedUpload> {
  const datasetId = newId('ds');
  const key = rawUploadKey(userId, datasetId, filename);
  const { size } = await platform.blobs.put(key, file);
  try {
    checkComplete();
  } catch (err) {
    await platform.blobs.delete(key);
    throw err;
  }
  return { datasetId, filename, key, size };
}

/** Removes a received upload that will not be recorded. */
export async function discardUpload(platform: Platform, received: ReceivedUpload): Promise<void> {
  await platform.blobs.delete(received.key);
}

/** Reads a received upload back once to describe it, and records it; a file that fails to parse is removed. */
export async function recordUpload(platform: Platform, userId: string, received: ReceivedUpload, options: UploadOptions = {}): Promise<RawDatasetRow> {
  const { datasetId, filename, key, size } = received;
  try {
    const source = await byteSourceFromBlob(platform.blobs, key);
    const described = await inspectDataset(source, filename, { delimiter: options.delimiter }).catch(async (err: unknown): Promise<DatasetInspection> => {
      if (!(options.lenient && err instanceof BadRequest)) throw err;
      return { format: 'jsonl', columns: [], sample: [], num_examples: await countLines(platform, key), delimiter: null, warnings: [] };
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
      delimiter: described.delimiter,
      warnings: described.warnings,
      ...(options.purpose ? { purpose: options.purpose } : {}),
    });
  } catch (err) {
    await discardUpload(platform, received);
    throw err;
  }
}

/** Stores an upload and records it: receiveUpload, then recordUpload. */
export async function storeUpload(
  platform: Platform,
  userId: string,
  filename: string,
  file: Readable,
  checkComplete: () => void = () => undefined,
  options: UploadOptions = {},
): Promise<RawDatasetRow> {
  return recordUpload(platform, userId, await receiveUpload(platform, userId, filename, file, checkComplete), options);
}

/** The multipart field `delimiter` checked: one of the four delimiters, else a 422 that says what to send. */
export function parseDelimiterField(value: unknown): Delimiter {
  if (typeof value === 'string' && (DELIMITERS as readonly string[]).includes(value)) return value as Delimiter;
  throw invalidField(
    ['body', 'delimiter'],
    `delimiter ${JSON.stringify(value)} is not one of the delimiters read here; send "," (comma), ";" (semicolon), "|" (pipe) or a tab character, ` +
      'or leave the field out to detect the delimiter from the file',
    'invalid_value',
  );
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

/** Receives a multipart file part within MAX_UPLOAD_BYTES: @fastify/multipart only truncates a file at the limit (and
 *  may have done so before the part is handed over), so the stream is failed when that happens later and the flag is
 *  checked once the file is stored; either way a 413, and nothing is kept. */
export async function receiveUploadPart(platform: Platform, userId: string, part: UploadPart): Promise<ReceivedUpload> {
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
  return receiveUpload(platform, userId, part.filename || 'upload', part.file, checkComplete);
}

/** Stores and records a multipart file part (receiveUploadPart, then recordUpload). */
export async function storeUploadPart(platform: Platform, userId: string, part: UploadPart, options: UploadOptions = {}): Promise<RawDatasetRow> {
  return recordUpload(platform, userId, await receiveUploadPart(platform, userId, part), options);
}
