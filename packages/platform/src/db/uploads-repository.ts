// Uploads in parts (/v1/uploads, OpenAI's Uploads API): the upload row and one row per accepted part. A part's row is
// written after its blob, and only while the upload is pending, so a part accepted is a part kept; a blob whose row
// never came (the process died between the two) lies under the upload's prefix and goes with it.
import type { BlobStore } from '../blobs/blob-store.ts';
import type { Database } from './database.ts';

export type UploadStatus = 'pending' | 'completed' | 'cancelled' | 'expired';

export interface UploadRow {
  upload_id: string;
  user_id: string;
  filename: string;
  purpose: string;
  mime_type: string;
  /** The byte count the client declared; the parts must add up to it. */
  bytes: number;
  /** Every part's blob lies under it. */
  blob_prefix: string;
  status: UploadStatus;
  /** The upload (raw dataset, /v1 file) the parts became; null until completed. */
  dataset_id: string | null;
  created_at: Date;
  expires_at: Date;
}

export interface UploadPartRow {
  part_id: string;
  upload_id: string;
  blob_key: string;
  size_bytes: number;
  created_at: Date;
}

export class UploadsRepository {
  constructor(private readonly db: Database) {}

  async insert(row: Pick<UploadRow, 'upload_id' | 'user_id' | 'filename' | 'purpose' | 'mime_type' | 'bytes' | 'blob_prefix' | 'expires_at'>): Promise<UploadRow> {
    const [created] = await this.db.query<UploadRow>(
      `INSERT INTO uploads (upload_id, user_id, filename, purpose, mime_type, bytes, blob_prefix, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
      [row.upload_id, row.user_id, row.filename, row.purpose, row.mime_type, row.bytes, row.blob_prefix, row.expires_at],
    );
    return created!;
  }

  /** The caller's upload; a pending one past its time reads as expired (the reconciler removes its parts). */
  async get(userId: string, uploadId: string): Promise<UploadRow | undefined> {
    const [row] = await this.db.query<UploadRow>(
      `SELECT upload_id, user_id, filename, purpose, mime_type, bytes, blob_prefix, dataset_id, created_at, expires_at,
              CASE WHEN status = 'pending' AND expires_at <= now() THEN 'expired' ELSE status END AS status
       FROM uploads WHERE upload_id = $1 AND user_id = $2`,
      [uploadId, userId],
    );
    return row;
  }

  /** Records a part whose blob is stored, if the upload is still pending and in time; undefined when it is not. */
  async addPart(partId: string, uploadId: string, blobKey: string, sizeBytes: number): Promise<UploadPartRow | undefined> {
    const [part] = await this.db.query<UploadPartRow>(
      `INSERT INTO upload_parts (part_id, upload_id, blob_key, size_bytes)
       SELECT $1, upload_id, $3, $4 FROM uploads WHERE upload_id = $2 AND status = 'pending' AND expires_at > now()
       RETURNING *`,
      [partId, uploadId, blobKey, sizeBytes],
    );
    return part;
  }

  async parts(uploadId: string): Promise<UploadPartRow[]> {
    return this.db.query<UploadPartRow>('SELECT * FROM upload_parts WHERE upload_id = $1 ORDER BY created_at, part_id', [uploadId]);
  }

  /** Ends a pending upload: completed (with the upload its parts became) or cancelled. Undefined when it was no longer
   *  pending (another request ended it first, or its time ran out). */
  async finish(uploadId: string, status: 'completed' | 'cancelled', datasetId: string | null = null): Promise<UploadRow | undefined> {
    const [row] = await this.db.query<UploadRow>(
      `UPDATE uploads SET status = $2, dataset_id = $3 WHERE upload_id = $1 AND status = 'pending' AND expires_at > now() RETURNING *`,
      [uploadId, status, datasetId],
    );
    return row;
  }

  /** Marks every pending upload past its time expired; returns them, whose parts are then removed. */
  async expire(): Promise<UploadRow[]> {
    return this.db.query<UploadRow>(`UPDATE uploads SET status = 'expired' WHERE status = 'pending' AND expires_at <= now() RETURNING *`);
  }

  /** Forgets the part rows of an upload that ended (their blobs are removed with its prefix). */
  async dropParts(uploadId: string): Promise<void> {
    await this.db.query('DELETE FROM upload_parts WHERE upload_id = $1', [uploadId]);
  }
}

/** An ended upload's parts removed: every blob under its prefix (also one a process stored and died before recording)
 *  and the part rows. */
export async function removeUploadParts(
  stores: { blobs: BlobStore; uploads: UploadsRepository },
  upload: Pick<UploadRow, 'upload_id' | 'blob_prefix'>,
): Promise<void> {
  await stores.blobs.deletePrefix(upload.blob_prefix);
  await stores.uploads.dropParts(upload.upload_id);
}
