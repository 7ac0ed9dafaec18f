-- Pause and resume (issue #44, OpenAI's fine_tuning.jobs.pause/resume): a paused job holds no worker and waits in no
-- queue; its last checkpoint (saved when it paused) is where a resume continues. pause_requested is the flag a running
-- job's worker watches, as it watches cancel_requested.

ALTER TABLE training_jobs DROP CONSTRAINT training_jobs_status_check;
ALTER TABLE training_jobs ADD CONSTRAINT training_jobs_status_check CHECK (status IN ('queued', 'preparing', 'training', 'paused', 'completed', 'failed'));
ALTER TABLE training_jobs ADD COLUMN pause_requested boolean NOT NULL DEFAULT false;
