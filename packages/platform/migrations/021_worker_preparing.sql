-- What a worker prepares for chat in the background after training (issue #56): the job converting now and those
-- waiting, one at a time; GET /workers shows it. Null until the worker's first heartbeat that carries it.
ALTER TABLE workers ADD COLUMN preparing json;
