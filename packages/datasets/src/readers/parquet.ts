// Parquet rows through hyparquet, over range reads of the source: the footer first, then one row group (or one
// slice of a large row group) at a time, so memory follows the row group, not the file.
import { AppError, BadRequest } from '@ftp/platform';
import { parquetMetadataAsync, parquetReadObjects, type AsyncBuffer, type FileMetaData, type RowGroup } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { readRange, type ByteSource } from './byte-source.ts';
import { emptyFileError } from './text.ts';
import { BATCH_ROWS, setField, type DatasetRow } from './rows.ts';

/** Row groups bigger than this (uncompressed) are read in slices when the file has offset indexes to allow it. */
const MAX_SLICE_BYTES = 64 * 1024 * 1024;

function asyncBuffer(source: ByteSource): AsyncBuffer {
  return {
    byteLength: source.size,
    slice: async (start, end = source.size) => (await readRange(source, start, end)).buffer,
  };
}

/** A parse failure becomes a 400 about the file; an error the byte source raised itself (the hub or the
 *  store is down: ServiceUnavailable) passes through unchanged, since re-uploading would not help. */
function unreadable(where: string, err: unknown): AppError {
  if (err instanceof AppError) return err;
  const reason = err instanceof Error ? err.message : String(err);
  if (/not supported/i.test(reason)) {
    return new BadRequest(`${where} uses a Parquet feature this reader does not support (${reason}); convert it to another format.`);
  }
  return new BadRequest(
    `${where} cannot be read (${reason}); the file may be truncated or corrupt. Export it again and re-upload it.`,
  );
}

/** Binary values become base64. Inside a `{bytes, path}` struct (how Hugging Face stores images and audio) the
 *  base64 string replaces the bytes in place; anywhere else a binary value becomes `{bytes: "<base64>"}`, so it
 *  cannot be mistaken for text. */
export function toJsonValue(value: unknown, key?: string): unknown {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'bigint':
      return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
    case 'number':
      return Number.isFinite(value) ? value : null;
    case 'string':
    case 'boolean':
      return value;
    case 'object':
      break;
    default:
      return String(value);
  }
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (value instanceof Uint8Array) {
    const base64 = Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
    return key === 'bytes' ? base64 : { bytes: base64 };
  }
  if (Array.isArray(value) || ArrayBuffer.isView(value)) {
    return Array.from(value as ArrayLike<unknown>, (item) => toJsonValue(item));
  }
  const out: DatasetRow = {};
  for (const [k, v] of Object.entries(value)) setField(out, k, toJsonValue(v, k));
  return out;
}

/** Row ranges to read for one row group: the whole group, or equal slices of it when it is large and every
 *  column has an offset index (without one, hyparquet would fetch the whole column chunk for every slice). */
function rowRanges(group: RowGroup, groupStart: number, sliceBytes: number): Array<[number, number]> {
  const rows = Number(group.num_rows);
  const sliceable = group.columns.every((c) => c.offset_index_offset !== undefined && c.offset_index_length);
  const slices = sliceable ? Math.max(1, Math.min(rows, Math.ceil(Number(group.total_byte_size) / sliceBytes))) : 1;
  const ranges: Array<[number, number]> = [];
  for (let i = 0; i < slices; i++) {
    const start = groupStart + Math.floor((rows * i) / slices);
    const end = groupStart + Math.floor((rows * (i + 1)) / slices);
    if (end > start) ranges.push([start, end]);
  }
  return ranges;
}

/** Rows of a Parquet file with JSON-safe values (see toJsonValue), in batches. `sliceBytes` is only lowered by
 *  tests, to exercise slicing without a 64 MiB row group. */
export async function* readParquetBatches(source: ByteSource, sliceBytes = MAX_SLICE_BYTES): AsyncGenerator<DatasetRow[]> {
  if (source.size === 0) throw emptyFileError(0);
  const file = asyncBuffer(source);
  let metadata: FileMetaData;
  try {
    metadata = await parquetMetadataAsync(file);
  } catch (err) {
    throw unreadable('The Parquet footer', err);
  }
  if (Number(metadata.num_rows) === 0) throw new BadRequest('The Parquet file has no rows.');
  let groupStart = 0;
  for (const [index, group] of metadata.row_groups.entries()) {
    for (const [rowStart, rowEnd] of rowRanges(group, groupStart, sliceBytes)) {
      let rows: Record<string, unknown>[];
      try {
        // utf8: false keeps unannotated BYTE_ARRAY columns (image bytes) as bytes; hyparquet's default decodes
        // them as UTF-8 text, which corrupts them. Columns marked as strings are still decoded.
        rows = await parquetReadObjects({ file, metadata, rowStart, rowEnd, compressors, utf8: false, useOffsetIndex: true });
      } catch (err) {
        throw unreadable(`Row group ${index + 1} of the Parquet file`, err);
      }
      for (let i = 0; i < rows.length; i += BATCH_ROWS) {
        yield rows.slice(i, i + BATCH_ROWS).map((row) => toJsonValue(row) as DatasetRow);
      }
    }
    groupStart += Number(group.num_rows);
  }
}
