-- Evaluations (POST /evaluation): one row per request, the caller's, with what was scored and the result.
-- The model is named by job_id (NULL for a base model) or base_model_id; the request never holds hub_token.

CREATE TABLE evaluations (
  evaluation_id         text PRIMARY KEY,
  user_id               text NOT NULL,
  processed_dataset_id  text NOT NULL,
  split                 text NOT NULL,
  job_id                text,
  model_source          text NOT NULL CHECK (model_source IN ('adapter', 'merged', 'base')),
  base_model_id         text NOT NULL,
  use_fast_engine       boolean NOT NULL,
  request               json NOT NULL,
  metrics               json NOT NULL,
  num_samples           integer NOT NULL,
  samples               json NOT NULL,
  warnings              json NOT NULL,
  elapsed_seconds       double precision NOT NULL,
  created_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX evaluations_user ON evaluations (user_id, created_at DESC);
