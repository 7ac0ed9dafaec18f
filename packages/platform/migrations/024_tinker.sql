-- The Tinker-compatible API (services/tinker, decisions.md "Own training loops"). A client session (create_session)
-- holds training runs and sampling sessions; a training run is one LoRA model a worker holds in memory on its
-- `session` lane, named by the SDK's `<session_id>:train:<n>` and, in tinker:// paths, by its run id (a job id);
-- every call on a run or a sampler is a row that the holding worker runs in order (training calls by seq_id) and
-- retrieve_future reads. The database is the truth here as everywhere: a call row never waits on a process that
-- is gone (the run's release fails what it left unrun).

CREATE TABLE tinker_sessions (
  session_id    text PRIMARY KEY,
  user_id       text NOT NULL,
  request       json NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  heartbeat_at  timestamptz NOT NULL DEFAULT now(),
  finished_at   timestamptz
);

CREATE TABLE tinker_runs (
  run_id        text PRIMARY KEY,
  model_id      text NOT NULL UNIQUE,
  session_id    text NOT NULL,
  user_id       text NOT NULL,
  base_model    text NOT NULL,
  -- rank, train_mlp, train_attn, train_unembed, seed; and from_state (the saved state it started from)
  config        json NOT NULL,
  status        text NOT NULL DEFAULT 'queued',
  worker_id     text,
  error         text,
  step          integer NOT NULL DEFAULT 0,
  last_loss     double precision,
  next_seq_id   integer NOT NULL DEFAULT 1,
  blob_prefix   text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tinker_runs_user ON tinker_runs (user_id, created_at DESC, run_id DESC);

CREATE TABLE tinker_samplers (
  sampler_id    text PRIMARY KEY,
  session_id    text NOT NULL,
  user_id       text NOT NULL,
  run_id        text,
  base_model    text NOT NULL,
  model_path    text,
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tinker_calls (
  request_id    text PRIMARY KEY,
  user_id       text NOT NULL,
  run_id        text,
  -- the model or sampler the call names; with seq_id the SDK's idempotency key (it resends a seq_id on retries)
  target_id     text NOT NULL,
  seq_id        bigint,
  op            text NOT NULL,
  request       json NOT NULL,
  status        text NOT NULL DEFAULT 'queued',
  result        json,
  error         json,
  created_at    timestamptz NOT NULL DEFAULT now(),
  finished_at   timestamptz,
  UNIQUE (target_id, seq_id)
);
CREATE INDEX tinker_calls_run ON tinker_calls (run_id, status, created_at);

CREATE TABLE tinker_checkpoints (
  run_id        text NOT NULL,
  kind          text NOT NULL,
  name          text NOT NULL,
  user_id       text NOT NULL,
  step          integer NOT NULL,
  size_bytes    bigint NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, kind, name)
);
