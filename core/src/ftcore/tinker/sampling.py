"""Tinker's sample: token ids in, token ids and their logprobs out, from any causal LM (a training session's live
adapter, or a base with a saved one). A plain decoding loop over the KV cache rather than `generate`, so that it
draws from a generator of its own (a seed per request), returns each token's logprob and stops on token ids or on
strings exactly as Tinker's SamplingParams say.

Logprobs are the model's own (temperature 1, before top-k/top-p), as forward_backward computes them: an
importance-sampling ratio of freshly sampled tokens is then exactly 1.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from ..errors import SpecError
from ..inference.generate import _stop_ids


@dataclass
class SamplingParams:
    """Tinker's SamplingParams (tinker/types/sampling_params.py): stop None keeps stopping at the model's end-of-turn
    tokens; given, it replaces them (`[]`: no stop at all, max_tokens ends every sample)."""

    max_tokens: int | None = None  # None: up to the model's context
    seed: int | None = None
    stop: str | list[str] | list[int] | None = None
    temperature: float = 1.0  # 0: greedy
    top_k: int = -1  # ≤ 0: off
    top_p: float = 1.0


@dataclass
class SampledSequence:
    tokens: list[int]  # a stop token or the tokens that made a stop string are included, as Tinker's renderers expect
    logprobs: list[float]
    stop_reason: Literal["stop", "length"]


@dataclass
class SampleOutput:
    sequences: list[SampledSequence]
    # Per prompt token, the first None (nothing predicts it); None unless asked for.
    prompt_logprobs: list[float | None] | None


@torch.no_grad()
def sample(model, tokenizer, prompt: list[int], num_samples: int, params: SamplingParams, prompt_logprobs: bool,
           generator: torch.Generator) -> SampleOutput:
    """`num_samples` continuations of `prompt`; with params.seed they are drawn from a generator seeded with it,
    else from `generator` (which advances)."""
    device = next(model.parameters()).device
    max_tokens = _check(model, prompt, num_samples, params)
    if params.seed is not None:
        generator = torch.Generator(device).manual_seed(params.seed)
    stop_ids, stop_strings = _stops(model, tokenizer, params.stop)
    out = model(input_ids=torch.tensor([prompt] * num_samples, device=device), use_cache=True)
    prompt_lp = _prompt_logprobs(out.logits[0].float(), prompt) if prompt_logprobs else None
    sequences = [SampledSequence([], [], "length") for _ in range(num_samples)]
    live = set(range(num_samples))
    for _ in range(max_tokens):
        logits = out.logits[:, -1].float()
        chosen = _choose(logits, params, generator)
        logprobs = logits.log_softmax(-1).gather(-1, chosen[:, None])[:, 0]
        for i in sorted(live):
            sequence = sequences[i]
            sequence.tokens.append(int(chosen[i]))
            sequence.logprobs.append(float(logprobs[i]))
            if sequence.tokens[-1] in stop_ids or _ends_with_stop_string(tokenizer, sequence.tokens, stop_strings):
                sequence.stop_reason = "stop"
                live.discard(i)
        if not live:
            break
        out = model(input_ids=chosen[:, None], past_key_values=out.past_key_values, use_cache=True)
    return SampleOutput(sequences, prompt_lp)


def _check(model, prompt: list[int], num_samples: int, params: SamplingParams) -> int:
    """The number of tokens to sample at most, once the request is known to be valid."""
    vocab = model.get_output_embeddings().weight.shape[0]
    context = getattr(model.config, "max_position_embeddings", None) or len(prompt) + (params.max_tokens or 0)
    if not prompt or not all(isinstance(t, int) and 0 <= t < vocab for t in prompt):
        raise SpecError.at("prompt", f"prompt must be a non-empty list of token ids in [0, {vocab})")
    if num_samples < 1:
        raise SpecError.at("num_samples", "num_samples must be ≥ 1")
    if params.temperature < 0 or not 0 < params.top_p <= 1:
        raise SpecError.at("sampling_params", "temperature must be ≥ 0 and top_p in (0, 1]")
    max_tokens = params.max_tokens if params.max_tokens is not None else context - len(prompt)
    if max_tokens < 1 or len(prompt) + max_tokens > context:
        raise SpecError.at("sampling_params.max_tokens", f"a prompt of {len(prompt)} tokens and max_tokens "
                           f"{params.max_tokens} do not fit the model's context of {context}; max_tokens must be 1 to "
                           f"{context - len(prompt)}")
    return max_tokens


def _stops(model, tokenizer, stop) -> tuple[set[int], list[str]]:
    if stop is None:
        return {t for t in _stop_ids(model, tokenizer) if t is not None}, []
    stops = [stop] if isinstance(stop, str) else list(stop)
    if all(isinstance(s, int) for s in stops):
        return set(stops), []
    if all(isinstance(s, str) and s for s in stops):
        return set(), stops
    raise SpecError.at("sampling_params.stop", "stop must be a string, a list of non-empty strings or a list of "
                                               "token ids")


def _ends_with_stop_string(tokenizer, tokens: list[int], stop_strings: list[str]) -> bool:
    if not stop_strings:
        return False
    text = tokenizer.decode(tokens)
    return any(s in text for s in stop_strings)


def _choose(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator) -> torch.Tensor:
    """One token per row: the most likely at temperature 0, else a draw after temperature, top-k and top-p."""
    if params.temperature == 0:
        return logits.argmax(-1)
    scaled = logits / params.temperature
    if 0 < params.top_k < scaled.shape[-1]:
        kth = scaled.topk(params.top_k, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    probs = scaled.softmax(-1)
    if params.top_p < 1:
        ordered, order = probs.sort(-1, descending=True)
        # A token is dropped once the more likely ones before it already hold top_p of the mass.
        dropped = ordered.cumsum(-1) - ordered >= params.top_p
        probs = probs.scatter(-1, order, ordered.masked_fill(dropped, 0.0))
    return torch.multinomial(probs, 1, generator=generator)[:, 0]


def _prompt_logprobs(logits: torch.Tensor, prompt: list[int]) -> list[float | None]:
    targets = torch.tensor(prompt[1:], device=logits.device)
    picked = logits[:-1].log_softmax(-1).gather(-1, targets[:, None])[:, 0]
    return [None, *picked.tolist()]
