-- Delimited text is read as people write it (issue #38): an upload records the delimiter it was read with (detected,
-- or chosen by the upload's `delimiter` field), so that processing reads the file the same way, and the warnings its
-- reading gave. Uploads from before were read with a comma (CSV) or a tab (TSV); JSON, JSONL and Parquet have none.

ALTER TABLE raw_datasets ADD COLUMN delimiter text CHECK (delimiter IN (',', ';', E'\t', '|'));
ALTER TABLE raw_datasets ADD COLUMN warnings json NOT NULL DEFAULT '[]';
UPDATE raw_datasets SET delimiter = ',' WHERE format = 'csv';
UPDATE raw_datasets SET delimiter = E'\t' WHERE format = 'tsv';
