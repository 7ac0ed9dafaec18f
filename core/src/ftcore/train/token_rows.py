"""A train row as its trainer tokenizes it (each trainer's own rows: methods/), and what pre-flight and its warnings
read of rows and tokenizers."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class TokenRow:
    """One train row as the trainer sees it: the whole sequence before truncation (preference: prompt + chosen),
    which tokens carry loss, and the span ids[start:stop] that truncation keeps."""

    ids: list[int]
    trained: list[bool]
    start: int
    stop: int
    prompt: int = 0  # preference and prompt-only: prompt tokens before truncation
    counted: int = 0  # tokens TokenCounter counts for this row in a training step (see `training_tokens`)

    @property
    def kept(self) -> int:
        return self.stop - self.start

    @property
    def trained_kept(self) -> int:
        return sum(self.trained[self.start:self.stop])


def text_tokenizer(processing_class):
    return getattr(processing_class, "tokenizer", processing_class)


def listed_rows(numbers: list[int], shown: int = 5) -> str:
    listed = ", ".join(map(str, numbers[:shown]))
    return f"row{'s' if len(numbers) > 1 else ''} {listed}{', …' if len(numbers) > shown else ''}"


def stop_ids(model_dir: str, tokenizer) -> set[int]:
    """The tokens generation stops at: the tokenizer's eos and generation_config.json's eos_token_id(s)."""
    stops = {tokenizer.eos_token_id} - {None}
    path = Path(model_dir) / "generation_config.json"
    if path.is_file():
        configured = json.loads(path.read_text()).get("eos_token_id")
        stops |= set(configured if isinstance(configured, list) else [configured]) - {None}
    return stops
