-- Augmentation of a processed dataset's train split: per method, the rows it added and the rows it could not make
-- ({"eda": {"added": 12, "dropped": 0}}); null when the dataset was not augmented.

ALTER TABLE processed_datasets ADD COLUMN augmentation json;
