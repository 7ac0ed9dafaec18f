"""Constrained decoding on transformers: a forced tool call is fixed text around JSON that a JSON Schema constrains
(lm-format-enforcer filters the tokens each step may take), as llama.cpp's grammar forces it on the fast engine."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ForcedCall:
    """The answer is `prefix`, then a JSON value of `schema`, then `suffix` (the family's call format: Qwen's
    <tool_call>\\n … \\n</tool_call>, Llama 3's bare JSON)."""

    schema: dict
    prefix: str = ""
    suffix: str = ""


def allowed_tokens_fn(tokenizer, schema: dict):
    """prefix_allowed_tokens_fn for model.generate: the tokens that keep the text a prefix of JSON matching `schema`.
    Whitespace-only tokens are left out where anything else is allowed: JSON needs none, and the enforcer's own limit
    on whitespace runs does not hold before a value, where an untrained model would otherwise spend its tokens."""
    from lmformatenforcer import CharacterLevelParserConfig, JsonSchemaParser
    from lmformatenforcer.integrations.transformers import build_transformers_prefix_allowed_tokens_fn

    parser = JsonSchemaParser(schema, config=CharacterLevelParserConfig(max_consecutive_whitespaces=1))
    enforce = build_transformers_prefix_allowed_tokens_fn(tokenizer, parser)
    blank = {i for i in range(len(tokenizer)) if (t := tokenizer.decode([i])) and not t.strip()}

    def allowed(batch_id: int, sent):
        tokens = enforce(batch_id, sent)
        kept = [t for t in tokens if t not in blank]
        return kept or tokens

    return allowed
