-- Whether an ended sweep's Optuna study has been deleted (#63). The holder ends the row first and deletes the study
-- after (so a holder that lost the sweep never deletes a study another needs); one killed in between, or a sweep that
-- ended while queued again after its holder died, left the study behind: a worker serving the sweep lane deletes it
-- later (services/worker/src/sweeps/run-sweep.ts deleteLeftStudies). Sweeps that ended before this migration are
-- taken as deleted.
ALTER TABLE sweeps ADD COLUMN study_deleted boolean NOT NULL DEFAULT true;
ALTER TABLE sweeps ALTER COLUMN study_deleted SET DEFAULT false;
