-- Evaluations as a resource (POST /evaluations, issue #59): standard benchmarks (lm-eval tasks, HumanEval) run by a
-- worker on a model, and with with_base on its base model too, their numbers stored as the harness reports them. A row
-- a worker takes like an export (worker_id; the watchdog and the reconciler hand it back when its worker is gone),
-- queued → running → completed | failed | cancelled; attempts counts the workers that took it, so one that kills its
-- worker every time stops being handed back. The synchronous POST /evaluation keeps its own table (evaluations): its
-- rows are results written once, with a dataset and samples, and no lifecycle. The request never holds hub_token.
-- Deleting a training job deletes its evaluations (its model is gone); the log of each goes with it.

CREATE TABLE evaluation_runs (
  evaluation_id    text PRIMARY KEY,
  user_id          text NOT NULL,
  status           text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
  job_id           text REFERENCES training_jobs (job_id) ON DELETE CASCADE,
  model_source     text NOT NULL CHECK (model_source IN ('adapter', 'merged', 'base')),
  checkpoint_step  integer,
  base_model_id    text NOT NULL,
  request          json NOT NULL,
  results          json,
  base_results     json,
  error            text,
  worker_id        text,
  attempts         integer NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL DEFAULT now(),
  started_at       timestamptz,
  finished_at      timestamptz,
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX evaluation_runs_user ON evaluation_runs (user_id, created_at DESC);
CREATE INDEX evaluation_runs_unfinished ON evaluation_runs (updated_at) WHERE status IN ('queued', 'running');

CREATE TABLE evaluation_run_events (
  evaluation_id  text NOT NULL REFERENCES evaluation_runs (evaluation_id) ON DELETE CASCADE,
  seq            integer NOT NULL,
  kind           text NOT NULL,
  data           json NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (evaluation_id, seq)
);
