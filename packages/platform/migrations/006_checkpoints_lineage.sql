-- Checkpoints you can use (GET /jobs/{id}/checkpoints; checkpoint_step on exports, inference, evaluation): one row
-- per checkpoint stored whole in the blob store, removed when the core rotates it away or the job is deleted.
-- A job continued from another (training_config.from_job) records its parent; load_best_model_at_end records
-- which step's weights the job kept.

CREATE TABLE job_checkpoints (
  job_id      text NOT NULL REFERENCES training_jobs (job_id) ON DELETE CASCADE,
  step        integer NOT NULL,
  epoch       double precision,
  train_loss  double precision,
  eval_loss   double precision,
  size_bytes  bigint NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, step)
);

ALTER TABLE training_jobs ADD COLUMN parent_job_id text;
ALTER TABLE training_jobs ADD COLUMN parent_checkpoint_step integer;
ALTER TABLE training_jobs ADD COLUMN best_step integer;

ALTER TABLE exports ADD COLUMN checkpoint_step integer;
