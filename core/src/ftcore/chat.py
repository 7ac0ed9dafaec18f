"""The chat format the core's own models use, and helpers to apply any model's chat template.

ChatML with `{% generation %}` markers, so the tokenizer can return the assistant-token mask that
assistant-only loss and assistant-token accuracy are computed from; the families' published templates (Qwen2.5's,
Llama 3's, with their tool sections) have their assistant turns found by rendering prefixes of the conversation.
"""
from __future__ import annotations

import json

from .errors import SpecError

END_OF_TURN = "<|im_end|>"
START_OF_TURN = "<|im_start|>"
PAD = "<|endoftext|>"
SPECIAL_TOKENS = [PAD, START_OF_TURN, END_OF_TURN]
# Qwen2, 2.5 and 3 split text with this (make-tiny-model's Qwen tokenizers too; GGUF export names it qwen2).
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
               r"\s+(?!\S)|\s+")

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
    return _marks_generation(tokenizer.chat_template)


def _marks_generation(template) -> bool:
    return isinstance(template, str) and "generation" in template and "endgeneration" in template


def without_weights(messages: list[dict]) -> list[dict]:
    """The messages as the chat template sees them: an assistant message's `weight` (OpenAI's fine-tuning format)
    decides the loss, never the rendered text; a tool call's `arguments`, a JSON string in OpenAI's format, is the
    object the families' templates write with `tojson`."""
    return [_for_template({k: v for k, v in m.items() if k != "weight"}) for m in messages]


def _for_template(message: dict) -> dict:
    if not message.get("tool_calls"):
        return message
    calls = []
    for call in message["tool_calls"]:
        function = dict(call.get("function", {}))
        if isinstance(function.get("arguments"), str):
            function["arguments"] = json.loads(function["arguments"])
        calls.append({**call, "function": function})
    return {**message, "content": message.get("content") or "", "tool_calls": calls}


def render(tokenizer, messages: list[dict], tools: list[dict] | None = None, chat_template: str | None = None,
           add_generation_prompt: bool = False) -> str:
    """The conversation as text through the model's own chat template, with the tool definitions when given."""
    return tokenizer.apply_chat_template(without_weights(messages), tools=tools or None, chat_template=chat_template,
                                         tokenize=False, add_generation_prompt=add_generation_prompt)


def trained_token_mask(tokenizer, messages: list[dict], chat_template: str | None = None,
                       tools: list[dict] | None = None) -> tuple[list[int], list[int]]:
    """The conversation's token ids and its loss mask: 1 on the assistant turns (their text or tool calls and the end
    of turn), 0 elsewhere (tool results included) and on the assistant turns with `weight` 0, which stay in the
    context but are not trained on. A template with {% generation %} blocks marks the turns itself; any other (the
    families' published templates) has each turn found as the text rendering it adds after the generation prompt."""
    if not _marks_generation(chat_template or tokenizer.chat_template):
        return _mask_by_prefixes(tokenizer, messages, tools, chat_template)
    encoded = tokenizer.apply_chat_template(without_weights(messages), tools=tools or None,
                                            chat_template=chat_template, tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
    ids, mask = list(encoded["input_ids"]), list(encoded["assistant_masks"])
    weights = [m.get("weight", 1) for m in messages if m["role"] == "assistant"]
    if all(w != 0 for w in weights) or not any(mask):
        return ids, mask
    runs = _runs(mask)
    if len(runs) != len(weights):
        raise SpecError(f"the chat template of {tokenizer.name_or_path} marks {len(runs)} assistant spans in a "
                        f"conversation of {len(weights)} assistant messages, so the turns with weight 0 cannot be "
                        "told apart; give each assistant turn its own {% generation %} block, or remove the weight 0 "
                        "turns")
    for (start, stop), weight in zip(runs, weights):
        if weight == 0:
            mask[start:stop] = [0] * (stop - start)
    return ids, mask


def _mask_by_prefixes(tokenizer, messages: list[dict], tools: list[dict] | None,
                      chat_template: str | None) -> tuple[list[int], list[int]]:
    """Each assistant turn is the text between the conversation before it with the generation prompt and the
    conversation through it (trailing whitespace after the end of turn left out); the tokens starting inside such a
    span are trained. A template whose shorter renderings are not prefixes of the whole cannot be read so: refused."""
    full = render(tokenizer, messages, tools, chat_template)
    spans = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant" or message.get("weight", 1) == 0:
            continue
        before = render(tokenizer, messages[:i], tools, chat_template, add_generation_prompt=True)
        through = render(tokenizer, messages[:i + 1], tools, chat_template)
        start = len(before)
        if not (through.startswith(before) and full.startswith(through)):
            raise SpecError(f"the chat template of {tokenizer.name_or_path} renders the start of a conversation "
                            "differently from the whole, so its assistant turns cannot be found; wrap its assistant "
                            "turn in {% generation %} … {% endgeneration %}")
        spans.append((start, len(through.rstrip())))
    encoded = tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    mask = [int(any(start <= begin < stop for start, stop in spans)) for begin, _ in encoded["offset_mapping"]]
    return list(encoded["input_ids"]), mask


def supports_tools(tokenizer, chat_template: str | None = None) -> bool:
    """Whether the template writes tool definitions and an assistant's tool call: a probe conversation rendered with
    a tool must show the tool's name in the prompt and the call's argument value in the answer."""
    tool = {"type": "function", "function": {"name": "probe_tool_name", "description": "probe",
                                              "parameters": {"type": "object",
                                                             "properties": {"probe_arg": {"type": "string"}}}}}
    call = {"id": "call_probe", "type": "function",
            "function": {"name": "probe_tool_name", "arguments": '{"probe_arg": "probe_value"}'}}
    question = [{"role": "user", "content": "probe"}]
    try:
        prompt = render(tokenizer, question, [tool], chat_template, add_generation_prompt=True)
        answered = render(tokenizer, [*question, {"role": "assistant", "content": "", "tool_calls": [call]}], [tool],
                          chat_template)
    except Exception:  # noqa: BLE001 - a template that raises on tools (jinja's own errors) has no tool support
        return False
    return "probe_tool_name" in prompt and "probe_value" in answered


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
