-- Checkpoint permissions (OpenAI's fine_tuning.checkpoints.permissions, issue #44): the owner of a job lets another
-- user (OpenAI's "project": a user id here) chat with, evaluate and fine-tune from one of its stored checkpoints.
-- Nothing else of the job is shared; deleting the job deletes its permissions.

CREATE TABLE checkpoint_permissions (
  permission_id  text PRIMARY KEY,
  job_id         text NOT NULL REFERENCES training_jobs (job_id) ON DELETE CASCADE,
  step           integer NOT NULL,
  project_id     text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (job_id, step, project_id)
);
CREATE INDEX checkpoint_permissions_grantee ON checkpoint_permissions (project_id, job_id, step);
