"""export: a trained model as files another runtime loads: merged weights, GGUF (weights, vocabulary, K-quants) with
its Ollama Modelfile, and ONNX."""
