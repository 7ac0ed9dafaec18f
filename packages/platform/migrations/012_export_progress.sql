-- No wait without a word (issue #39): a running export says what its worker does now and for how long, updated every
-- PROGRESS_INTERVAL_S while a stage runs (a merge, a GGUF conversion, an upload); null once it has ended.

ALTER TABLE exports ADD COLUMN progress json;
