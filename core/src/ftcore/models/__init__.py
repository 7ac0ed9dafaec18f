"""models: making a model folder (import-model from a GGUF or a folder, make-tiny-model for tests), vision models' parts,
and loading a model for inference (a base, an adapter on its base, or merged)."""
