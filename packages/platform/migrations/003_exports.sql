-- Exports of trained jobs (decisions.md "Export"): one row per POST /exports, running → completed | failed.
-- The hub token of an export is never stored: it lives in the process's memory until the worker takes it.
-- A job's exports go with it (ON DELETE CASCADE), as its exported files go with its blob prefix.

CREATE TABLE exports (
  export_id          text PRIMARY KEY,
  job_id             text NOT NULL REFERENCES training_jobs (job_id) ON DELETE CASCADE,
  user_id            text NOT NULL,
  type               text NOT NULL CHECK (type IN ('adapter', 'merged', 'gguf')),
  status             text NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
  destination        json NOT NULL,
  hub_repo_id        text,
  gguf_quantization  text,
  message            text,
  artifacts          json NOT NULL DEFAULT '[]',
  worker_id          text,
  started_at         timestamptz NOT NULL DEFAULT now(),
  finished_at        timestamptz,
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX exports_job ON exports (job_id, started_at DESC);
CREATE INDEX exports_status ON exports (status);
