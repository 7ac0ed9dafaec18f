-- Pairwise comparisons (POST /comparisons): one row per finished comparison, the caller's, with what was asked and
-- the result (summary and every pair's answers and verdicts). A row is written only once the comparison is done, so
-- there is no state to be stuck in. job_a / job_b name the jobs compared (NULL for a base model): deleting a job or a
-- processed dataset deletes the comparisons that hold its answers or its rows. The request never holds hub_token.

CREATE TABLE comparisons (
  comparison_id         text PRIMARY KEY,
  user_id               text NOT NULL,
  processed_dataset_id  text NOT NULL,
  job_a                 text,
  job_b                 text,
  request               json NOT NULL,
  result                json NOT NULL,
  elapsed_seconds       double precision NOT NULL,
  created_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX comparisons_user ON comparisons (user_id, created_at DESC, comparison_id DESC);
