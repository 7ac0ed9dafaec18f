-- Pre-flight: a job keeps the report its worker made before training (GET /jobs/{id} shows it). Training speed is
-- measured per host and device for a model, method and trainer (by a timed dry-run probe, then by each real job)
-- and kept across worker restarts, so a dry run can estimate the wall time on every live worker.

ALTER TABLE training_jobs ADD COLUMN preflight json;

CREATE TABLE throughput (
  host               text NOT NULL,
  device             text NOT NULL,
  base_model_id      text NOT NULL,
  method             text NOT NULL,
  trainer_type       text NOT NULL,
  tokens_per_second  double precision NOT NULL,
  measured_by        text NOT NULL,
  measured_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (host, device, base_model_id, method, trainer_type)
);
