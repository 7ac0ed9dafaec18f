-- Sweeps (POST /sweeps, #63): a base training request, a search space, an objective, a budget; Optuna proposes the
-- trials (its study in a journal file under DATA_DIR embedded, in this database scaled out: optuna's own tables) and
-- each trial is an ordinary training job carrying sweep_id. The sweep is work a worker holds on its lane `sweep`
-- (worker_id; the watchdog and the reconciler hand it back to the queue when its worker is gone, and whoever takes it
-- next goes on from the trials recorded here and in the study): queued → running → completed | failed | cancelled.
-- sweep_trials mirrors what was told to the study, so reads need no Python. The request never holds hub_token or a
-- tracker api_key: they are sealed under the sweep's id until it ends.

CREATE TABLE sweeps (
  sweep_id          text PRIMARY KEY,
  user_id           text NOT NULL,
  name              text NOT NULL,
  status            text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
  request           json NOT NULL,
  best_job_id       text,
  best_value        double precision,
  error             text,
  worker_id         text,
  cancel_requested  boolean NOT NULL DEFAULT false,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  finished_at       timestamptz
);
CREATE INDEX sweeps_user ON sweeps (user_id, created_at DESC);
CREATE INDEX sweeps_unfinished ON sweeps (updated_at) WHERE status IN ('queued', 'running');

CREATE TABLE sweep_trials (
  sweep_id    text NOT NULL REFERENCES sweeps (sweep_id) ON DELETE CASCADE,
  trial       integer NOT NULL,
  job_id      text,
  params      json NOT NULL,
  state       text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'completed', 'pruned', 'failed')),
  value       double precision,
  steps       json NOT NULL DEFAULT '{}',
  error       text,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (sweep_id, trial)
);

ALTER TABLE training_jobs ADD COLUMN sweep_id text;
ALTER TABLE training_jobs ADD COLUMN prune_reason text;
CREATE INDEX training_jobs_sweep ON training_jobs (sweep_id) WHERE sweep_id IS NOT NULL;

-- Scaled out, Optuna's own tables (studies, trials, …) live in a schema of their own, apart from ours.
CREATE SCHEMA IF NOT EXISTS optuna;
