-- OpenAI's Batch API (/v1/batches, issue #44): a file of chat requests answered by the workers, results written to an
-- output file and an error file. The batch is a row a worker takes like an export (worker_id, the watchdog and the
-- reconciler hand it back when its worker is gone); each line answered is a row of batch_results, keyed by its line,
-- written once (a batch resumed on another worker skips the lines already answered, so no line is answered twice).
-- Files now say what they are for: 'fine-tune' (every file so far), 'batch' (a batch's input), 'batch_output'.

ALTER TABLE raw_datasets ADD COLUMN purpose text NOT NULL DEFAULT 'fine-tune' CHECK (purpose IN ('fine-tune', 'batch', 'batch_output'));

CREATE TABLE batches (
  batch_id           text PRIMARY KEY,
  user_id            text NOT NULL,
  endpoint           text NOT NULL,
  input_file_id      text NOT NULL,
  completion_window  text NOT NULL,
  metadata           json,
  status             text NOT NULL DEFAULT 'validating'
                     CHECK (status IN ('validating', 'in_progress', 'finalizing', 'cancelling', 'completed', 'failed', 'cancelled', 'expired')),
  -- File-level failures (OpenAI's errors.data): the input is not a batch file at all.
  errors             json,
  total              integer NOT NULL DEFAULT 0,
  output_file_id     text,
  error_file_id      text,
  worker_id          text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  in_progress_at     timestamptz,
  finalizing_at      timestamptz,
  completed_at       timestamptz,
  failed_at          timestamptz,
  cancelling_at      timestamptz,
  cancelled_at       timestamptz,
  expired_at         timestamptz,
  expires_at         timestamptz NOT NULL,
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX batches_user ON batches (user_id, created_at DESC);
CREATE INDEX batches_unfinished ON batches (updated_at) WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling');

CREATE TABLE batch_results (
  batch_id   text NOT NULL REFERENCES batches (batch_id) ON DELETE CASCADE,
  line       integer NOT NULL,
  custom_id  text NOT NULL,
  -- The line's output-file object (OpenAI's {id, custom_id, response, error}); ok = answered, false = an error line.
  ok         boolean NOT NULL,
  result     json NOT NULL,
  PRIMARY KEY (batch_id, line)
);
