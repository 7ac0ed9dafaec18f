-- A pre-flight time that is the user's time (issue #39), after completed: on a worker that serves chat, a completed
-- job's model is prepared in the background for the fast engine (its GGUF files). What that took for the last job of
-- the model, method and trainer on this host, in seconds (an adapter's conversion; a whole model's GGUF); null until
-- one was prepared there.

ALTER TABLE throughput ADD COLUMN chat_ready_seconds double precision;
