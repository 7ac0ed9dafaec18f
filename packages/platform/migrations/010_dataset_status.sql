-- Processing that augments with a language model runs on a worker (decisions.md "Preprocessing"): the row exists
-- from the request on, `processing` with a progress record ({done, total, by_method}), until the worker makes it
-- `ready` (splits written) or `failed` (error says why; nothing partial is listed as usable). worker_id names the
-- worker holding it, so that a silent worker's dataset is queued again (as exports are). Plain processing answers
-- `ready` at once, as every row before this migration was.

ALTER TABLE processed_datasets ADD COLUMN status text NOT NULL DEFAULT 'ready' CHECK (status IN ('ready', 'processing', 'failed'));
ALTER TABLE processed_datasets ADD COLUMN progress json;
ALTER TABLE processed_datasets ADD COLUMN error text;
ALTER TABLE processed_datasets ADD COLUMN worker_id text;
ALTER TABLE processed_datasets ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX processed_datasets_status ON processed_datasets (status) WHERE status = 'processing';
