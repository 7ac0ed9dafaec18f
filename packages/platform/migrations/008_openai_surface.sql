-- The OpenAI-compatible surface (/v1): a fine-tuning job there is a training job here. A job whose training file
-- failed validation has no processed dataset (processed_dataset_id null). A user's cancel is recorded as such
-- (cancelled_at), not read back from the error text. `openai` keeps what only that face shows: the files, suffix,
-- seed, metadata, method and the hyperparameters as resolved ("auto" replaced by the values used).

ALTER TABLE training_jobs ALTER COLUMN processed_dataset_id DROP NOT NULL;
ALTER TABLE training_jobs ADD COLUMN cancelled_at timestamptz;
ALTER TABLE training_jobs ADD COLUMN openai json;
