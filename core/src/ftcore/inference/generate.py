"""generate: batch generation with the chat template applied, from a base, adapter (base + PEFT) or merged model."""
from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .. import events
from ..chat import render
from .constrained import ForcedCall, allowed_tokens_fn
from ..data import read_jsonl
from ..errors import Cancelled, SpecError


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
    batch_size: int = field(default=0, metadata={"help": "conversations generated together; 0: 8 on the CPU, on CUDA "
                                                         "as many as the free device memory holds (up to 256)"})
    seed: int = field(default=0, metadata={"help": "random seed for sampling"})
    device: str = field(default="auto", metadata={"help": "auto, cpu or cuda"})


def prompt_of(conversation: list[dict]) -> tuple[list[dict], str | None]:
    if conversation and conversation[-1]["role"] == "assistant":
        return conversation[:-1], conversation[-1]["content"]
    return conversation, None


def generate_texts(model, tokenizer, prompts: list[list[dict]], max_new_tokens: int = 256, temperature: float = 0.0,
                   top_p: float = 1.0, batch_size: int | None = None) -> list[str]:
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
                       temperature: float = 0.0, top_p: float = 1.0, batch_size: int | None = None,
                       should_stop: Callable[[], bool] | None = None,
                       encode: Callable[[list[list[dict]]], dict] | None = None) -> list[list[int]]:
    """The new tokens of each answer, up to (not including) the first stop token; `batch_size` None: chosen by
    choose_engine. `should_stop` is polled after
    every generated token; when it turns true the generation ends with Cancelled (serve's cancel). `encode` makes
    the left-padded model inputs of a batch of prompts (vision: the processor's, with pixel values)."""
    stops = set(_stop_ids(model, tokenizer))
    rows = _generated_rows(model, tokenizer, prompts, max_new_tokens, temperature, top_p, batch_size, [], should_stop,
                           encode)
    return [_until_stop_token(row, stops)[0] for row, _ in rows]


def generate_answers(model, tokenizer, prompts: list[list[dict] | str], max_new_tokens: int = 256,
                     temperature: float = 0.0,
                     top_p: float = 1.0, batch_size: int | None = None, stop: list[str] | None = None,
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
    # Rows stop at their stop string's last token, not at max_new_tokens (transformers' StopStringCriteria).
    stop_at_strings = {"stop_strings": stop_strings, "tokenizer": tokenizer} if stop_strings else {}
    constrained = {"prefix_allowed_tokens_fn": allowed_tokens_fn(tokenizer, forced.schema)} if forced else {}
    texts = None if encode is not None else [
        _raw(tokenizer, p) if isinstance(p, str) else render(tokenizer, p, tools, add_generation_prompt=True)
        + (forced.prefix if forced else "") for p in prompts]
    lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]] if texts else []
    engine = choose_engine(model, lengths, max_new_tokens, batch_size)
    # Compiled: every batch is padded to the call's longest prompt, so one room serves them all.
    longest = max(lengths, default=0)
    compiled_room = _room(model, longest, max_new_tokens) if engine.compiled else None
    generated = 0  # tokens of every row so far, padding included: what a cancelled request cost
    settings = dict(do_sample=sampling, temperature=temperature if sampling else None,
                    top_p=top_p if sampling else None, top_k=None, eos_token_id=tokenizer.eos_token_id,
                    pad_token_id=tokenizer.pad_token_id, **stop_at_strings, **constrained)
    for i in range(0, len(prompts), engine.batch_size):
        if texts is None:
            encoded = encode(prompts[i:i + engine.batch_size]).to(device)
        else:
            encoded = tokenizer(texts[i:i + engine.batch_size], return_tensors="pt", padding=True,
                                add_special_tokens=False, return_token_type_ids=False).to(device)
        rows = encoded["input_ids"].shape[0]
        with torch.no_grad():
            if engine.compiled:
                new = compiled_generate(model, model.generate, encoded["input_ids"], encoded["attention_mask"],
                                        engine.batch_size, longest, should_stop, max_new_tokens=compiled_room,
                                        **settings)
            else:
                room = _room(model, encoded["input_ids"].shape[1], max_new_tokens)
                new = model.generate(**encoded, max_new_tokens=room, stopping_criteria=_stopping_criteria(should_stop),
                                     **settings)[:, encoded["input_ids"].shape[1]:]
        generated += rows * new.shape[1]
        if should_stop is not None and should_stop():
            raise Cancelled("generation cancelled", generated_tokens=generated)
        prompt_lengths = encoded["attention_mask"].sum(dim=1).tolist()
        yield from zip(new[:rows].tolist(), prompt_lengths)


# The generation engine (#31, #64). On the CPU, and for little work on CUDA: transformers' generate with its dynamic
# KV cache. On CUDA when the work pays for a compile, or the shape is compiled already: the engine's own decode loop
# (decode.py: a static KV cache, the step compiled by torch.compile and STEPS_PER_READ steps replayed as one CUDA graph,
# the host reading finished rows once per replay; transformers 4.57's continuous batching refuses CUDA graphs, and its
# generate loop around a compiled forward cost 8.2 of a step's 8.8 ms on an H200). A compiled graph holds one shape,
# so every batch of a call is made that shape.
ENGINE_VARIABLE = "FTCORE_GENERATE_ENGINE"  # auto (the default), plain or compiled (tests, benchmarks)
# prompts × max_new_tokens below which the first compile of a shape costs more than it saves: plain generate at a
# batch sized from free memory already makes ~1,000 tokens/s on the 1B shape (#31), so a compile of ~60 s pays from
# about 64k new tokens on. Set from that estimate; the GPU half of bench/generate prints the compile's real time.
COMPILE_MIN_NEW_TOKENS = 65_536
PROMPT_BUCKET = 64  # prompts are left-padded to a multiple of this many tokens, so nearby lengths share a graph
MAX_COMPILED_SHAPES = 6  # torch recompiles a function 8 times, then runs it eagerly: a model keeps to fewer shapes
MAX_BATCH = 256
CPU_BATCH = 8


@dataclass(frozen=True)
class Engine:
    """How a call generates: `batch_size` rows at a time, compiled (static cache, CUDA graphs) or not."""

    compiled: bool
    batch_size: int


def choose_engine(model, prompt_lengths: list[int], max_new_tokens: int, batch_size: int | None,
                  work: int | None = None) -> Engine:
    """The engine for prompts of these token lengths (empty: prompts the processor encodes, i.e. images, which stay
    on the dynamic cache). `batch_size` None: 8 on the CPU; on CUDA what the free device memory holds. `work`: the new
    tokens the model will generate in this shape (default: prompts × max_new_tokens; GRPO: over its whole run)."""
    wanted = os.environ.get(ENGINE_VARIABLE, "auto")
    if wanted not in ("auto", "plain", "compiled"):
        raise SpecError(f"{ENGINE_VARIABLE} must be auto, plain or compiled, not {wanted!r}")
    cuda = _on_cuda(model)
    inner = _base_model(model)
    compilable = (bool(prompt_lengths) and getattr(inner, "_can_compile_fullgraph", False)
                  and not getattr(inner, "_ftcore_compile_failed", False) and not _has_sliding_layers(inner))
    count = max(len(prompt_lengths), 1)
    if compilable and wanted != "plain":
        padded = _bucket(max(prompt_lengths))
        rows = batch_size or min(CPU_BATCH if not cuda else _batch_from_memory(model, padded + max_new_tokens),
                                 2 ** math.ceil(math.log2(count)))
        shapes = getattr(inner, "_ftcore_compiled_shapes", set())
        known = (rows, padded + max_new_tokens) in shapes
        worth = (work or count * max_new_tokens) >= COMPILE_MIN_NEW_TOKENS or known
        if wanted == "compiled" or (cuda and worth and (known or len(shapes) < MAX_COMPILED_SHAPES)):
            return Engine(True, rows)
    if batch_size:
        return Engine(False, batch_size)
    if not cuda or not prompt_lengths:
        return Engine(False, CPU_BATCH)
    return Engine(False, min(_batch_from_memory(model, max(prompt_lengths) + max_new_tokens), count))


def compiled_generate(model, generate: Callable, input_ids, attention_mask, rows: int, longest: int = 0,
                      should_stop: Callable[[], bool] | None = None, **settings):
    """The new tokens `generate` (the model's generate) writes after each prompt, from the engine's own decode loop
    (decode.py: a static KV cache, the step compiled and replayed as CUDA graphs on a GPU), or, for settings the loop
    does not serve (decode.plan), from `generate` on a static cache with its forward compiled. The batch is left-padded
    to the multiple of PROMPT_BUCKET positions that holds `longest` (the longest prompt of the call, so every batch
    gets one width) and filled to `rows` rows with copies of its last row, so that one compiled graph serves every
    batch of that shape; the filler rows' answers are returned too (callers drop them). Positions come from the
    attention mask, so the padding changes no answer. `should_stop` as generate_token_ids. When the model cannot be
    compiled, it says so once and generates on the dynamic cache from then on."""
    import torch

    from . import decode

    inner = _base_model(model)
    width = _bucket(max(input_ids.shape[1], longest))
    extra = width - input_ids.shape[1]
    fill = rows - input_ids.shape[0]
    input_ids = torch.nn.functional.pad(input_ids, (extra, 0), value=settings.get("pad_token_id") or 0)
    attention_mask = torch.nn.functional.pad(attention_mask, (extra, 0), value=0)
    if fill > 0:
        input_ids = torch.cat([input_ids, input_ids[-1:].expand(fill, -1)])
        attention_mask = torch.cat([attention_mask, attention_mask[-1:].expand(fill, -1)])
    stopping = _stopping_criteria(should_stop)
    if not getattr(inner, "_ftcore_compile_failed", False):
        new_tokens = settings.get("max_new_tokens") or settings["generation_config"].max_new_tokens
        shape = (rows, width + new_tokens)
        if shape not in getattr(inner, "_ftcore_compiled_shapes", set()):
            events.emit(events.Log(level="info", message=f"generation: a new decode shape, {rows} rows × {width} + "
                                   f"{new_tokens} positions (on a GPU its step compiles once: tens of seconds)"))
        # In training, PEFT and TRL hook the input embeddings to make their output require grad (once each, so
        # disable_input_require_grads removes only the last): nothing without grad, and torch.compile cannot trace
        # requires_grad_, so the embeddings' forward hooks are set aside while a compiled graph generates.
        embeddings = inner.get_input_embeddings()
        hooks = dict(embeddings._forward_hooks)
        embeddings._forward_hooks.clear()
        try:
            if (loop := decode.plan(inner, settings)) is not None:
                seed = int(torch.randint(0, 2**31 - rows, ()))  # the global generator's: torch.manual_seed holds
                out = decode.decode(inner, input_ids, attention_mask, loop, seed, settings.get("stop_strings"),
                                    settings.get("tokenizer"), should_stop)
            else:
                out = generate(input_ids=input_ids, attention_mask=attention_mask, cache_implementation="static",
                               compile_config=_compile_config(input_ids.device), disable_compile=False,
                               stopping_criteria=stopping, **settings)[:, input_ids.shape[1]:]
            inner.__dict__.setdefault("_ftcore_compiled_shapes", set()).add(shape)
            return out
        except Exception as e:  # noqa: BLE001 - the compiled path is an optimisation: the dynamic cache still answers
            inner._ftcore_compile_failed = True
            events.emit(events.Log(level="warning", message=f"generation on a compiled static cache failed "
                                   f"({type(e).__name__}: {e}); this model generates without it from now on"))
        finally:
            embeddings._forward_hooks.update(hooks)
    out = generate(input_ids=input_ids, attention_mask=attention_mask, disable_compile=True, stopping_criteria=stopping,
                   **settings)
    return out[:, input_ids.shape[1]:]


def _on_cuda(model) -> bool:
    return next(model.parameters()).device.type == "cuda"


def _base_model(model):
    """The transformers model under a PEFT wrapper (where generate keeps its cache and compiled call), or the model."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def _text_config(model):
    return model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config


def _has_sliding_layers(model) -> bool:
    """Sliding-window attention layers (Gemma 2/3, Mistral, GPT-OSS): transformers' static cache keeps their length
    as a Python int (4.57 cache_utils.StaticSlidingWindowLayer.cumulative_length), so torch.compile recompiles the
    decode step at every token until its recompile limit, then runs it eagerly: slower than the dynamic cache. Such
    models generate without the compiled engine (upstream: huggingface/transformers#44609, declined)."""
    config = _text_config(model)
    return "sliding_attention" in (getattr(config, "layer_types", None) or []) or (
        getattr(config, "sliding_window", None) is not None and getattr(config, "use_sliding_window", True))


def _compile_config(device):
    from transformers import CompileConfig

    # transformers' default for static caches, made explicit: one graph per shape, CUDA graphs replayed.
    config = CompileConfig(fullgraph=True, dynamic=False, mode="reduce-overhead")
    config._compile_all_devices = device.type != "cuda"  # only when asked for (ENGINE_VARIABLE=compiled on a CPU)
    return config


def _bucket(length: int) -> int:
    return PROMPT_BUCKET * math.ceil(length / PROMPT_BUCKET)


def _batch_from_memory(model, positions: int) -> int:
    """Rows whose KV cache (`positions` each), prefill activations and last logits fit in half of the free device
    memory (the other half: the allocator's fragments, the compiled graphs' pools), at most MAX_BATCH."""
    import torch

    config = _text_config(model)
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    width = next(model.parameters()).element_size()
    per_row = positions * (2 * config.num_hidden_layers * kv_heads * head_dim * width  # the KV cache
                           + (4 * config.hidden_size + 3 * getattr(config, "intermediate_size", 4 * config.hidden_size))
                           * width)  # a layer's activations in the prefill
    per_row += 2 * 4 * config.vocab_size  # the last position's logits, fp32, and their processed copy
    free, _ = torch.cuda.mem_get_info(next(model.parameters()).device)
    return max(1, min(MAX_BATCH, int(free // 2 // per_row)))


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


def _raw(tokenizer, prompt: str) -> str:
    """A prompt given as text is a raw continuation (HumanEval): no chat template, but the start-of-text token the
    tokenizer puts first by default, as a chat template does (the batch is encoded without special tokens)."""
    bos = tokenizer.bos_token
    starts = bos is not None and tokenizer("x", add_special_tokens=True)["input_ids"][:1] == [tokenizer.bos_token_id]
    return bos + prompt if starts and not prompt.startswith(bos) else prompt


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
    if options.temperature < 0 or not 0 < options.top_p <= 1 or options.batch_size < 0:
        raise SpecError("temperature must be ≥ 0, top_p in (0, 1] and batch_size ≥ 0 (0: chosen for the device)")
    records = read_jsonl(options.input_file, "input_file")
    if not all(isinstance(r.get("messages"), list) for r in records):
        raise SpecError('input_file records must be {"messages": [...]}')
    if not Path(options.model, "config.json").is_file():
        raise SpecError(f"model {options.model} is not a model folder (no config.json)")
    import torch

    from ..models.loading import load_for_inference
    from ..models.vision import prompt_encoder

    pairs = [prompt_of(r["messages"]) for r in records]
    encode = prompt_encoder([options.adapter, options.model], [p for p, _ in pairs])
    torch.manual_seed(options.seed)
    model, tokenizer = load_for_inference(options.model, options.adapter, options.device)
    answers = generate_token_ids(model, tokenizer, [p for p, _ in pairs], options.max_new_tokens,
                                 options.temperature, options.top_p, options.batch_size or None, encode=encode)
    texts = tokenizer.batch_decode(answers, skip_special_tokens=True)
    out = Path(options.output_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as fh:
        for index, (text, ids, (_, reference)) in enumerate(zip(texts, answers, pairs)):
            fh.write(json.dumps({"index": index, "text": text, "reference": reference, "token_ids": ids}) + "\n")
    events.emit(events.Artifact(kind="generations", path=str(out)))
