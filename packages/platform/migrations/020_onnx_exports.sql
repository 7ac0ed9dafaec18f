-- ONNX export (issue #43): a fourth export type, and what the export measured of each ONNX variant against
-- transformers (share of greedy tokens before the first divergence, the execution provider, whether it is usable).
ALTER TABLE exports DROP CONSTRAINT exports_type_check;
ALTER TABLE exports ADD CONSTRAINT exports_type_check CHECK (type IN ('adapter', 'merged', 'gguf', 'onnx'));
ALTER TABLE exports ADD COLUMN parity json;
