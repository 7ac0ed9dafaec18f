-- An ONNX export's variants beside fp32, as its request chose them (POST /exports onnx_variants): a JSON list of
-- fp16, q4, q4f16; null for other types and for an ONNX export that left it out (all three, as every export before).
ALTER TABLE exports ADD COLUMN onnx_variants json;
