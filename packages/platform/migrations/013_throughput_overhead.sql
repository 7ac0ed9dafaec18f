-- A pre-flight time that is the user's time (issue #39): besides its training speed, what a real job of the model,
-- method and trainer spent on this host around its steps (loading, preparing the data, evaluating, saving, storing),
-- in seconds; null until a job has run there (a probe measures the speed only).

ALTER TABLE throughput ADD COLUMN overhead_seconds double precision;
