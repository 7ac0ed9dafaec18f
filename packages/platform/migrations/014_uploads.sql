-- OpenAI's Uploads API (/v1/uploads, issue #44): a file sent in parts. Each accepted part is a blob under the upload's
-- prefix and a row here, so a process that dies between parts loses nothing already accepted; completing joins the
-- parts (in the order the client names) into one upload of raw_datasets, its id in dataset_id. A pending upload past
-- expires_at is marked expired by the reconciler and its parts removed.

CREATE TABLE uploads (
  upload_id    text PRIMARY KEY,
  user_id      text NOT NULL,
  filename     text NOT NULL,
  purpose      text NOT NULL,
  mime_type    text NOT NULL,
  bytes        bigint NOT NULL,
  blob_prefix  text NOT NULL,
  status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'completed', 'cancelled', 'expired')),
  dataset_id   text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL
);
CREATE INDEX uploads_pending ON uploads (expires_at) WHERE status = 'pending';

CREATE TABLE upload_parts (
  part_id     text PRIMARY KEY,
  upload_id   text NOT NULL REFERENCES uploads (upload_id) ON DELETE CASCADE,
  blob_key    text NOT NULL,
  size_bytes  bigint NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX upload_parts_upload ON upload_parts (upload_id);
