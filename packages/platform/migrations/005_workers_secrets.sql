-- Scaled out: the worker registry gets what GET /workers shows and submit checks read (host, devices as a
-- list, queues served, work in hand); rows are only ever about live processes, so the old table is replaced.
-- Secrets a job needs at run time are stored sealed (AES-256-GCM with SECRETS_KEY), never in clear, with an
-- expiry; the worker that runs the job deletes them when it ends.

DROP TABLE workers;
CREATE TABLE workers (
  worker_id     text PRIMARY KEY,
  host          text NOT NULL,
  pid           integer NOT NULL,
  devices       json NOT NULL,
  queues        json NOT NULL,
  current_jobs  json NOT NULL DEFAULT '[]',
  started_at    timestamptz NOT NULL DEFAULT now(),
  heartbeat_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE secrets (
  owner_id    text PRIMARY KEY,
  sealed      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);
CREATE INDEX secrets_expiry ON secrets (expires_at);
