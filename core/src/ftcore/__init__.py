"""ftcore: the ML core of the fine-tuning pipeline (train, merge, generate, make-tiny-model, import-model).

Driven by the TypeScript workers: one JSON spec file in, one JSON event per stdout line out.
"""
