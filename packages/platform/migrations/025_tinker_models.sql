-- Exports and evaluations of a Tinker run's sampler weights (#60: the model tinker:<run id>:<name>): job_id then
-- holds the run's id (a tinker_runs row, shown as a job) and checkpoint_name the weights' name. A foreign key cannot
-- point at either of two tables, so exports and evaluation_runs lose theirs to training_jobs: deleting a job deletes
-- its exports with it (JobsRepository.delete, one transaction, as ON DELETE CASCADE did) and its evaluations before
-- it (deleteTrainingJob, as before); deleting a run does the same for the run's (deleteTinkerRun).

ALTER TABLE exports DROP CONSTRAINT exports_job_id_fkey;
ALTER TABLE exports ADD COLUMN checkpoint_name text;
ALTER TABLE evaluation_runs DROP CONSTRAINT evaluation_runs_job_id_fkey;
ALTER TABLE evaluation_runs ADD COLUMN checkpoint_name text;
