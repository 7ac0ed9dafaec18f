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
