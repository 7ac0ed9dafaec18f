"""Tinker's built-in losses, token-wise on the target logprobs of one datum and summed (never averaged): the client
normalises, by choosing its weights or advantages. Definitions from Tinker's docs (tinker-docs.thinkingmachines.ai
/tinker/losses/<name>), whose implementation snippets these follow line by line.

A threshold may come per token in loss_fn_inputs (the SDK's Datum converts `clip_low_threshold` and
`clip_high_threshold` lists, tinker/types/datum.py), else from loss_fn_config, else the default below.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..errors import SpecError

Tensor = torch.Tensor


@dataclass(frozen=True)
class Loss:
    # loss_fn_inputs it needs besides target_tokens, and those it reads when given; each the shape of target_tokens.
    inputs: tuple[str, ...]
    optional: tuple[str, ...]
    # loss_fn_config keys → default (None: the caller must give it).
    config: dict[str, float | None]
    # (target logprobs, loss_fn_inputs, resolved config) → the datum's loss, a scalar.
    compute: Callable[[Tensor, dict[str, Tensor], dict[str, float]], Tensor]


def _setting(name: str, inputs: dict[str, Tensor], config: dict[str, float]) -> Tensor | float:
    return inputs[name] if name in inputs else config[name]


def _ratio(logprobs: Tensor, inputs: dict[str, Tensor]) -> Tensor:
    """p_θ(x) / q(x): the learner's probability of the sampled token over the sampler's."""
    return torch.exp(logprobs - inputs["logprobs"])


def cross_entropy(logprobs: Tensor, inputs: dict[str, Tensor], config: dict[str, float]) -> Tensor:
    # Weights default to ones: a forward() that only wants logprobs need not send them.
    weights = inputs.get("weights", torch.ones_like(logprobs))
    return -(weights * logprobs).sum()


def importance_sampling(logprobs: Tensor, inputs: dict[str, Tensor], config: dict[str, float]) -> Tensor:
    return -(_ratio(logprobs, inputs) * inputs["advantages"]).sum()


def ppo(logprobs: Tensor, inputs: dict[str, Tensor], config: dict[str, float]) -> Tensor:
    ratio, advantages = _ratio(logprobs, inputs), inputs["advantages"]
    clipped = torch.clamp(ratio, _setting("clip_low_threshold", inputs, config),
                          _setting("clip_high_threshold", inputs, config))
    return -torch.min(ratio * advantages, clipped * advantages).sum()


def cispo(logprobs: Tensor, inputs: dict[str, Tensor], config: dict[str, float]) -> Tensor:
    # The clipped ratio is a constant coefficient (detached): CISPO bounds a token's gradient, never zeroes it.
    clipped = torch.clamp(_ratio(logprobs, inputs), _setting("clip_low_threshold", inputs, config),
                          _setting("clip_high_threshold", inputs, config)).detach()
    return -(clipped * logprobs * inputs["advantages"]).sum()


def dro(logprobs: Tensor, inputs: dict[str, Tensor], config: dict[str, float]) -> Tensor:
    quadratic = (logprobs - inputs["logprobs"]) ** 2
    return -(logprobs * inputs["advantages"] - 0.5 * config["beta"] * quadratic).sum()


_SAMPLED = ("logprobs", "advantages")
_CLIPS = ("clip_low_threshold", "clip_high_threshold")
LOSSES: dict[str, Loss] = {
    "cross_entropy": Loss((), ("weights",), {}, cross_entropy),
    "importance_sampling": Loss(_SAMPLED, (), {}, importance_sampling),
    "ppo": Loss(_SAMPLED, _CLIPS, {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}, ppo),
    # Tinker's CISPO page: no lower bound by default, the upper one at 4.
    "cispo": Loss(_SAMPLED, _CLIPS, {"clip_low_threshold": 0.0, "clip_high_threshold": 4.0}, cispo),
    # No default beta is documented, so none is guessed.
    "dro": Loss(_SAMPLED, (), {"beta": None}, dro),
}
# Tinker's other names (tinker/types/loss_fn_type.py), refused with this list: gspo, stable_reinforce and custom
# need provenance spans or a server-side loss graph this engine does not have.


def resolve(name: str, config: dict[str, float] | None) -> tuple[Loss, dict[str, float]]:
    """The loss called `name` and its config with defaults filled in; a SpecError names what is wrong."""
    if name not in LOSSES:
        raise SpecError.at("loss_fn", f"loss_fn {name!r} is not supported; supported: {', '.join(LOSSES)}")
    loss, given = LOSSES[name], dict(config or {})
    unknown = sorted(set(given) - set(loss.config))
    if unknown:
        known = ", ".join(loss.config) or "none"
        raise SpecError.at("loss_fn_config", f"loss_fn_config {unknown} does not apply to {name}; it takes: {known}")
    resolved = {key: given.get(key, default) for key, default in loss.config.items()}
    missing = [key for key, value in resolved.items() if value is None]
    if missing:
        raise SpecError.at("loss_fn_config", f"{name} needs loss_fn_config {missing} (no default is documented)")
    if not all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in resolved.values()):
        raise SpecError.at("loss_fn_config", f"loss_fn_config values must be numbers (got {given})")
    return loss, {key: float(value) for key, value in resolved.items()}
