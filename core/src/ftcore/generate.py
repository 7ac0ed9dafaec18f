"""generate: batch generation with the chat template applied, from a base, adapter (base + PEFT) or merged model."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from . import events
from .chat import render
from .constrained import ForcedCall, allowed_tokens_fn
from .data import read_jsonl
from .errors import Cancelled, SpecError


@dataclass
class Options:
    """Generate answers for a batch of conversations; writes one JSON line per conversation."""

    model: str = field(metadata={"help": "base or merged model folder"})
    input_file: str = field(metadata={"help": 'JSONL of {"messages": [...]}: every message is the prompt '
                                              '(a final assistant message, if any, is dropped and kept as reference)'})
    output_file: str = field(metadata={"help": 'JSONL written here: {"index", "text", "reference", "token_ids"} '
                                                 'per conversation'})
    adapter: str | None = field(default=None, metadata={"help": "LoRA adapter folder to apply on top of model"})
    max_new_tokens: int = field(default=256, metadata={"help": "tokens to generate at most"})
    temperature: float = field(default=0.0, metadata={"help": "0 = greedy; > 0 samples"})
    top_p: float = field(default=1.0, metadata={"help": "nucleus sampling mass (when sampling)"})
    batch_size: int = field(default=8, metadata={"help": "conversations per forward pass"})
    seed: int = field(default=0, metadata={"help": "random seed for sampling"})
    device: str = field(default="auto", metadata={"help": "auto, cpu or cuda"})


def prompt_of(conversation: list[dict]) -> tuple[list[dict], str | None]:
    if conversation and conversation[-1]["role"] == "assistant":
        return conversation[:-1], conversation[-1]["content"]
    return conversation, None


def generate_texts(model, tokenizer, prompts: list[list[dict]], max_new_tokens: int = 256, temperature: float = 0.0,
                   top_p: float = 1.0, batch_size: int = 8) -> list[str]:
    ids = generate_token_ids(model, tokenizer, prompts, max_new_tokens, temperature, top_p, batch_size)
    return tokenizer.batch_decode(ids, skip_special_tokens=True)


@dataclass
class Answer:
    """One conversation's answer: its new tokens, its text, how it ended and the prompt's length in tokens."""

    token_ids: list[int]
    text: str
    # "stop": a stop token or a stop string ended it; "length": max_new_tokens did.
    finish_reason: Literal["stop", "length"]
    prompt_tokens: int


def generate_token_ids(model, tokenizer, prompts: list[list[dict]], max_new_tokens: int = 256,
                       temperature: float = 0.0, top_p: float = 1.0, batch_size: int = 8,
                       should_stop: Callable[[], bool] | None = None,
                       encode: Callable[[list[list[dict]]], dict] | None = None) -> list[list[int]]:
    """The new tokens of each answer, up to (not including) the first stop token. `should_stop` is polled after
    every generated token; when it turns true the generation ends with Cancelled (serve's cancel). `encode` makes
    the left-padded model inputs of a batch of prompts (vision: the processor's, with pixel values)."""
    stops = set(_stop_ids(model, tokenizer))
    rows = _generated_rows(model, tokenizer, prompts, max_new_tokens, temperature, top_p, batch_size, [], should_stop,
                           encode)
    return [_until_stop_token(row, stops)[0] for row, _ in rows]


def generate_answers(model, tokenizer, prompts: list[list[dict]], max_new_tokens: int = 256, temperature: float = 0.0,
                     top_p: float = 1.0, batch_size: int = 8, stop: list[str] | None = None,
                     should_stop: Callable[[], bool] | None = None, tools: list[dict] | None = None,
                     forced: ForcedCall | None = None) -> list[Answer]:
    """Each answer up to its first stop token, or up to the first of the `stop` strings: its text leaves the string
    out, its token_ids keep the tokens that made it (they were generated). `should_stop` as generate_token_ids; the
    prompts are rendered with `tools` when given; `forced` makes every answer that tool call (constrained.py)."""
    stops, stop = set(_stop_ids(model, tokenizer)), stop or []
    answers = []
    for row, prompt_tokens in _generated_rows(model, tokenizer, prompts, max_new_tokens, temperature, top_p, batch_size,
                                              stop, should_stop, None, tools, forced):
        ids, ended = _until_stop_token(row, stops)
        text = tokenizer.decode(ids, skip_special_tokens=True)
        if forced is not None:  # the fixed text around the constrained JSON (its suffix only once the JSON ended)
            text = forced.prefix + text + (forced.suffix if ended else "")
        cut = min((at for at in (text.find(s) for s in stop) if at >= 0), default=None)
        if cut is not None:
            # The row ended with the stop string; a batch pads the rest, unless its padding is a stop token.
            while ids and ids[-1] == tokenizer.pad_token_id:
                ids.pop()
            answers.append(Answer(ids, text[:cut], "stop", prompt_tokens))
        else:
            answers.append(Answer(ids, text, "stop" if ended else "length", prompt_tokens))
    return answers


def _generated_rows(model, tokenizer, prompts, max_new_tokens, temperature, top_p, batch_size, stop_strings,
                    should_stop, encode, tools=None, forced=None) -> Iterator[tuple[list[int], int]]:
    """(the new tokens of a row, as generate left them (stop tokens, padding), the prompt's length) per prompt."""
    import torch

    tokenizer.padding_side = "left"
    device = next(model.parameters()).device
    sampling = temperature > 0
    stopping = _stopping_criteria(should_stop)
    # Rows stop at their stop string's last token, not at max_new_tokens (transformers' StopStringCriteria).
    stop_at_strings = {"stop_strings": stop_strings, "tokenizer": tokenizer} if stop_strings else {}
    constrained = {"prefix_allowed_tokens_fn": allowed_tokens_fn(tokenizer, forced.schema)} if forced else {}
    for i in range(0, len(prompts), batch_size):
        if encode is not None:
            encoded = encode(prompts[i:i + batch_size]).to(device)
        else:
            batch = [render(tokenizer, p, tools, add_generation_prompt=True) + (forced.prefix if forced else "")
                     for p in prompts[i:i + batch_size]]
            encoded = tokenizer(batch, return_tensors="pt", padding=True, add_special_tokens=False,
                                return_token_type_ids=False).to(device)
        with torch.no_grad():
            out = model.generate(**encoded, max_new_tokens=_room(model, encoded["input_ids"].shape[1], max_new_tokens),
                                 do_sample=sampling,
                                 temperature=temperature if sampling else None, top_p=top_p if sampling else None,
                                 top_k=None, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                                 stopping_criteria=stopping, **stop_at_strings, **constrained)
        if should_stop is not None and should_stop():
            raise Cancelled("generation cancelled")
        prompt_lengths = encoded["attention_mask"].sum(dim=1).tolist()
        yield from zip(out[:, encoded["input_ids"].shape[1]:].tolist(), prompt_lengths)


def _room(model, prompt_length: int, max_new_tokens: int) -> int:
    """New tokens a batch may generate: max_new_tokens, cut to what the model's context leaves after the (padded)
    prompts, as llama.cpp cuts it; a request asking for more is answered, ending with finish_reason length, instead of
    generating past the positions the model was trained on (or for as long as a huge max_new_tokens says)."""
    config = getattr(model, "config", None)
    context = getattr(config, "max_position_embeddings", None) or getattr(getattr(config, "text_config", None),
                                                                           "max_position_embeddings", None)
    if not isinstance(context, int) or context <= 0:
        return max_new_tokens
    if prompt_length >= context:
        raise SpecError(f"a prompt is {prompt_length} tokens and the model's context is {context} tokens, so it does not "
                        "fit; shorten the conversation")
    return min(max_new_tokens, context - prompt_length)


def _until_stop_token(row: list[int], stops: set[int]) -> tuple[list[int], bool]:
    """The tokens before the first stop token, and whether there was one."""
    end = next((k for k, token in enumerate(row) if token in stops), None)
    return (row, False) if end is None else (row[:end], True)


def _stopping_criteria(should_stop: Callable[[], bool] | None):
    if should_stop is None:
        return None
    from transformers import StoppingCriteria, StoppingCriteriaList

    class _StopWhen(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            import torch

            return torch.full((input_ids.shape[0],), should_stop(), dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([_StopWhen()])


def _stop_ids(model, tokenizer) -> list[int]:
    configured = model.generation_config.eos_token_id
    configured = [configured] if isinstance(configured, int) else list(configured or [])
    return [tokenizer.eos_token_id, *configured]


def run(options: Options) -> None:
    if options.temperature < 0 or not 0 < options.top_p <= 1:
        raise SpecError("temperature must be ≥ 0 and top_p in (0, 1]")
    records = read_jsonl(options.input_file, "input_file")
    if not all(isinstance(r.get("messages"), list) for r in records):
        raise SpecError('input_file records must be {"messages": [...]}')
    if not Path(options.model, "config.json").is_file():
        raise SpecError(f"model {options.model} is not a model folder (no config.json)")
    import torch

    from .models import load_for_inference
    from .vision import prompt_encoder

    pairs = [prompt_of(r["messages"]) for r in records]
    encode = prompt_encoder([options.adapter, options.model], [p for p, _ in pairs])
    torch.manual_seed(options.seed)
    model, tokenizer = load_for_inference(options.model, options.adapter, options.device)
    answers = generate_token_ids(model, tokenizer, [p for p, _ in pairs], options.max_new_tokens,
                                 options.temperature, options.top_p, options.batch_size, encode=encode)
    texts = tokenizer.batch_decode(answers, skip_special_tokens=True)
    out = Path(options.output_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as fh:
        for index, (text, ids, (_, reference)) in enumerate(zip(texts, answers, pairs)):
            fh.write(json.dumps({"index": index, "text": text, "reference": reference, "token_ids": ids}) + "\n")
    events.emit(events.Artifact(kind="generations", path=str(out)))
