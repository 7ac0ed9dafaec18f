// Blob keys of the preprocessing service, in one place: raw uploads and processed datasets.
import { userKeySegment } from '@ftp/platform';

/** A file name safe as one key segment: its base name, odd characters replaced, at most 120 characters. */
export function safeFilename(filename: string): string {
  const base = filename.split(/[\\/]/).pop() ?? '';
  const cleaned = base.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^\.+/, '');
  return (cleaned || 'upload').slice(-120);
}

export function processedPrefix(userId: string, processedDatasetId: string): string {
  return `processed/${userKeySegment(userId)}/${processedDatasetId}/`;
}

export function rawUploadKey(userId: string, datasetId: string, filename: string): string {
  return `raw/${userKeySegment(userId)}/${datasetId}/${safeFilename(filename)}`;
}
