"""The chat format the core's own models use, and helpers to apply any model's chat template.

ChatML with `{% generation %}` markers, so the tokenizer can return the assistant-token mask that
assistant-only loss and assistant-token accuracy are computed from.
"""
from __future__ import annotations

END_OF_TURN = "<|im_end|>"
START_OF_TURN = "<|im_start|>"
PAD = "<|endoftext|>"
SPECIAL_TOKENS = [PAD, START_OF_TURN, END_OF_TURN]

CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- generation %}{{- message['content'] + '<|im_end|>' }}{%- endgeneration %}"
    "{{- '\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def text_of(content) -> str:
    """Message content as text: a string, or the text parts of a parts list."""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if p.get("type") == "text")


def has_generation_markers(tokenizer) -> bool:
    return "generation" in (tokenizer.chat_template or "") and "endgeneration" in (tokenizer.chat_template or "")


def without_weights(messages: list[dict]) -> list[dict]:
    """The messages as the chat template sees them: an assistant message's `weight` (OpenAI's fine-tuning format)
    decides the loss, never the rendered text."""
    return [{k: v for k, v in m.items() if k != "weight"} for m in messages]


def trained_token_mask(tokenizer, messages: list[dict],
                       chat_template: str | None = None) -> tuple[list[int], list[int]]:
    """The conversation's token ids and its loss mask: 1 on the tokens the template's {% generation %} blocks cover
    (the assistant turns), 0 elsewhere and on the assistant turns with `weight` 0, which stay in the context but are
    not trained on. The template marks one run of tokens per assistant turn, in order; a template whose runs cannot
    be matched to the turns is refused when a turn has weight 0 (never guessed)."""
    encoded = tokenizer.apply_chat_template(without_weights(messages), chat_template=chat_template, tokenize=True,
                                            return_dict=True, return_assistant_tokens_mask=True)
    ids, mask = list(encoded["input_ids"]), list(encoded["assistant_masks"])
    weights = [m.get("weight", 1) for m in messages if m["role"] == "assistant"]
    if all(w != 0 for w in weights) or not any(mask):
        return ids, mask
    runs = _runs(mask)
    if len(runs) != len(weights):
        from .errors import SpecError

        raise SpecError(f"the chat template of {tokenizer.name_or_path} marks {len(runs)} assistant spans in a "
                        f"conversation of {len(weights)} assistant messages, so the turns with weight 0 cannot be "
                        "told apart; give each assistant turn its own {% generation %} block, or remove the weight 0 "
                        "turns")
    for (start, stop), weight in zip(runs, weights):
        if weight == 0:
            mask[start:stop] = [0] * (stop - start)
    return ids, mask


def _runs(mask: list[int]) -> list[tuple[int, int]]:
    """(start, stop) of each run of 1s."""
    runs, start = [], None
    for i, on in enumerate([*mask, 0]):
        if on and start is None:
            start = i
        elif not on and start is not None:
            runs.append((start, i))
            start = None
    return runs

# Gemma 3's chat format (the packaged GGUF carries no template), with generation markers for the assistant mask.
GEMMA3_END_OF_TURN = "<end_of_turn>"
GEMMA3_TEMPLATE = (
    "{{- bos_token }}"
    "{%- if messages[0]['role'] == 'system' %}"
    "{%- set first_user_prefix = messages[0]['content'] + '\\n\\n' %}{%- set loop_messages = messages[1:] %}"
    "{%- else %}{%- set first_user_prefix = '' %}{%- set loop_messages = messages %}{%- endif %}"
    "{%- for message in loop_messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<start_of_turn>model\\n' }}"
    "{%- generation %}{{- message['content'] | trim }}{{- '<end_of_turn>' }}{%- endgeneration %}"
    "{{- '\\n' }}"
    "{%- else %}"
    "{{- '<start_of_turn>' + message['role'] + '\\n' + (first_user_prefix if loop.first else '') }}"
    "{{- message['content'] | trim }}{{- '<end_of_turn>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<start_of_turn>model\\n' }}{%- endif %}"
)
