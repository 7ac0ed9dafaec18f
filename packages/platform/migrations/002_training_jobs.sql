-- Training jobs, the events they report (progress, metrics, status changes) and the workers running them.
-- A job's secrets (hub_token, tracker api_key) are never stored: they live in the worker's memory only.

CREATE TABLE training_jobs (
  job_id                text PRIMARY KEY,
  user_id               text NOT NULL,
  job_name              text NOT NULL,
  status                text NOT NULL CHECK (status IN ('queued', 'preparing', 'training', 'completed', 'failed')),
  processed_dataset_id  text NOT NULL,
  base_model_id         text NOT NULL,
  modality              text NOT NULL,
  training_config       json NOT NULL,
  progress              json,
  metrics               json,
  artifacts             json NOT NULL DEFAULT '{"file":{},"raw":{},"hub":{}}',
  adapter_path          text,
  gguf_path             text,
  tracker_url           text,
  error                 text,
  worker_id             text,
  cancel_requested      boolean NOT NULL DEFAULT false,
  blob_prefix           text NOT NULL,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  started_at            timestamptz,
  finished_at           timestamptz
);
CREATE INDEX training_jobs_user ON training_jobs (user_id, created_at DESC);
CREATE INDEX training_jobs_status ON training_jobs (status);

CREATE TABLE job_events (
  job_id      text NOT NULL REFERENCES training_jobs (job_id) ON DELETE CASCADE,
  seq         integer NOT NULL,
  kind        text NOT NULL,
  data        json NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, seq)
);

CREATE TABLE workers (
  worker_id     text PRIMARY KEY,
  devices       json NOT NULL,
  started_at    timestamptz NOT NULL DEFAULT now(),
  heartbeat_at  timestamptz NOT NULL DEFAULT now()
);
