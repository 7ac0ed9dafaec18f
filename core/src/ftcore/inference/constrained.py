"""Constrained decoding on transformers: a forced tool call is fixed text around JSON that a JSON Schema constrains
(lm-format-enforcer filters the tokens each step may take), as llama.cpp's grammar forces it on the fast engine."""
from __future__ import annotations

import functools
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
    Left out where anything else is allowed:
    - whitespace-only tokens: JSON needs none, and the enforcer's own limit on whitespace runs does not hold before a
      value, where an untrained model would otherwise spend its tokens;
    - tokens that are no whole characters (a byte of a longer UTF-8 character: the enforcer reads each as U+FFFD, so
      the text it follows drifts from the text decoded, and it stops the answer mid-string) or hold control characters
      (the enforcer lets them into strings, where JSON forbids them). Characters are then written with whole-character
      tokens, as every common one has in a real model's vocabulary."""
    from lmformatenforcer import CharacterLevelParserConfig, JsonSchemaParser
    from lmformatenforcer.integrations.transformers import build_transformers_prefix_allowed_tokens_fn

    vocabulary, avoided = _vocabulary(tokenizer)
    parser = JsonSchemaParser(schema, config=CharacterLevelParserConfig(max_consecutive_whitespaces=1))
    enforce = build_transformers_prefix_allowed_tokens_fn(vocabulary, parser)

    def allowed(batch_id: int, sent):
        tokens = enforce(batch_id, sent)
        kept = [t for t in tokens if t not in avoided]
        return kept or tokens

    return allowed


@functools.lru_cache(maxsize=2)
def _vocabulary(tokenizer):
    """The enforcer's view of a tokenizer and the tokens left out, once per tokenizer (each decodes the whole
    vocabulary: seconds for a real model's, and GRPO asks for every batch it samples)."""
    from lmformatenforcer.integrations.transformers import build_token_enforcer_tokenizer_data

    avoided = set()
    for i in range(len(tokenizer)):
        text = tokenizer.decode([i])
        if text and (not text.strip() or "\ufffd" in text or any(ord(c) < 0x20 for c in text)):
            avoided.add(i)
    return build_token_enforcer_tokenizer_data(tokenizer), frozenset(avoided)
