-- Raw uploads, processed datasets and API keys. Plain Postgres SQL: the same file runs on PGlite
-- (embedded) and on a Postgres server (scaled out). Every row carries user_id; every query filters on it.
-- Rows shown to people (samples, splits) are `json`, not `jsonb`: jsonb reorders object keys.

CREATE TABLE api_keys (
  key_id      text PRIMARY KEY,
  user_id     text NOT NULL,
  name        text NOT NULL,
  key_hash    text NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX api_keys_user ON api_keys (user_id);

CREATE TABLE raw_datasets (
  dataset_id    text PRIMARY KEY,
  user_id       text NOT NULL,
  filename      text NOT NULL,
  format        text NOT NULL,
  blob_key      text NOT NULL,
  size_bytes    bigint NOT NULL,
  num_examples  integer NOT NULL,
  columns       json NOT NULL,
  sample        json NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX raw_datasets_user ON raw_datasets (user_id, created_at DESC);

CREATE TABLE processed_datasets (
  processed_dataset_id  text PRIMARY KEY,
  user_id               text NOT NULL,
  dataset_id            text NOT NULL,
  dataset_name          text NOT NULL,
  dataset_subset        text NOT NULL,
  dataset_source        text NOT NULL CHECK (dataset_source IN ('upload', 'hub')),
  processing_mode       text NOT NULL CHECK (processing_mode IN ('language_modeling', 'prompt_only', 'preference')),
  modality              text NOT NULL CHECK (modality IN ('text', 'vision')),
  config                json NOT NULL,
  splits                json NOT NULL,
  num_examples          integer NOT NULL,
  columns               json NOT NULL,
  blob_prefix           text NOT NULL,
  created_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX processed_datasets_user ON processed_datasets (user_id, created_at DESC);
