"""Which layers a Tinker LoRA adapts: create_model's train_attn, train_mlp and train_unembed flags mapped onto a
model's own module names, found by where each linear layer sits rather than by a per-architecture table."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import SpecError

# Tinker's LoRA scale (tinker-cookbook hyperparam_utils.py: lora_alpha=32, whatever the rank).
LORA_ALPHA = 32


@dataclass
class LoraSpec:
    """A session's model and adapter, as Tinker's create_model gives them (tinker/types/lora_config.py)."""

    base_model: str
    rank: int = 32
    train_mlp: bool = True
    train_attn: bool = True
    train_unembed: bool = True
    seed: int = 0


def target_modules(model, spec: LoraSpec) -> list[str]:
    """The linear layers of the parts the flags select: attention (under a module named *attn* or *attention*), MLP
    (under *mlp*, *feed_forward* or *experts*), the output layer; never a vision tower's. By their last name part, as
    PEFT matches them, unless one such name also belongs to a layer left out: then by full name."""
    import torch

    wanted, unwanted = [], []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear):
            (wanted if _selected(model, name, module, spec) else unwanted).append(name)
    leaves = {name.rsplit(".", 1)[-1] for name in wanted}
    if leaves & {name.rsplit(".", 1)[-1] for name in unwanted}:
        return sorted(wanted)
    return sorted(leaves)


def _selected(model, name: str, module, spec: LoraSpec) -> bool:
    parents = name.lower().split(".")[:-1]
    if module is model.get_output_embeddings():
        return spec.train_unembed
    if any("vision" in p or "visual" in p or "projector" in p for p in parents):
        return False
    if any("attn" in p or "attention" in p for p in parents):
        return spec.train_attn
    if any(p in ("mlp", "feed_forward", "experts") for p in parents):
        return spec.train_mlp
    return False


def lora_config(model, spec: LoraSpec):
    from peft import LoraConfig

    if spec.rank < 1:
        raise SpecError.at("rank", f"rank {spec.rank} must be ≥ 1")
    targets = target_modules(model, spec)
    if not targets:
        raise SpecError("train_attn, train_mlp and train_unembed select no layer of this model; enable at least one")
    return LoraConfig(r=spec.rank, lora_alpha=LORA_ALPHA, lora_dropout=0.0, target_modules=targets,
                      task_type="CAUSAL_LM")
