"""Pre-flight: the model without its weights (built on the meta device) and the memory a run will take, estimated."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..memory import HEADROOM
from ..spec import Options as TrainOptions
from ..spec import completion_budget
from ..token_rows import TokenRow


# QLoRA keeps the decoder's linear weights in 4-bit NF4 with double-quantised scales: 4 bits + 0.5 bit per weight.
NF4_BYTES = 0.5625
# Activations kept for the backward pass, per token and layer, in units of hidden_size × 2 bytes (Korthikanti et al.
# 2022 count 34 for a GPT block without recomputation): only when the decoder's layers cannot be found by name.
ACTIVATION_FACTOR = 34
EAGER_ATTENTION_FACTOR = 5  # eager attention keeps scores, softmax and dropout mask: ~5 × heads × s² per layer


@dataclass
class ModelFacts:
    facts: dict
    quantizable: int  # weights of the linear layers bitsandbytes quantises for QLoRA (all but the output layer)
    heads: int
    # Activation values one token keeps per decoder layer for the backward pass (see `_layer_activations`).
    layer_activations: int


def model_facts(spec: TrainOptions) -> ModelFacts:
    """Parameter counts from the model built on the meta device (config.json only; no weights read). Trainable:
    all for Full; for LoRA/QLoRA r × (in_features + out_features) over the linear layers PEFT adapts: every one
    but the output layer (target_modules all-linear), a vision model's text decoder projections, or the modules
    of the adapter being continued (init_adapter)."""
    import torch
    from accelerate import init_empty_weights
    from transformers import AutoConfig

    from ..device import uses_bf16

    config = AutoConfig.from_pretrained(spec.base_model)
    text = config.get_text_config()
    if spec.modality == "vision":
        from transformers import AutoModelForImageTextToText as Auto
    else:
        from transformers import AutoModelForCausalLM as Auto
    with init_empty_weights():
        model = Auto.from_config(config)
    model.tie_weights()  # from_pretrained ties the output layer to the embedding (tie_word_embeddings); from_config not
    parameters = sum(p.numel() for p in model.parameters())
    output = model.get_output_embeddings()
    linears = [(name, m) for name, m in model.named_modules() if isinstance(m, torch.nn.Linear) and m is not output]
    if spec.method == "Full":
        trainable = parameters
    else:
        rank, targeted = _lora_targets(spec)
        trainable = sum(rank * (m.in_features + m.out_features) for name, m in linears if targeted(name))
    facts = {"parameters": parameters, "trainable_parameters": trainable,
             "dtype": "bfloat16" if uses_bf16(spec) else "float32", "hidden_size": text.hidden_size,
             "num_layers": text.num_hidden_layers, "vocab_size": text.vocab_size}
    return ModelFacts(facts, sum(m.weight.numel() for _, m in linears), text.num_attention_heads,
                  _layer_activations(spec, linears, text.hidden_size))


def _layer_activations(spec: TrainOptions, linears, hidden: int) -> int:
    """Values one token keeps for the backward pass in one decoder layer, counted on the first text decoder layer:
    each linear layer's input and output, the gated MLP's activation and product (2 × the gate's width), four
    hidden-wide norm and residual tensors; LoRA with dropout also keeps each adapted layer's dropped input. Measured
    against Gemma 3 270M on CPU (bench/preflight), the 34 × hidden of Korthikanti et al. (GPT blocks, 16-bit) fell
    short by a quarter: gated MLPs are wider and LoRA's dropout keeps copies."""
    layer = [(name, m) for name, m in linears if ".layers.0." in name and "vision" not in name]
    values = sum(m.in_features + m.out_features for _, m in layer) + 4 * hidden
    values += sum(2 * m.out_features for name, m in layer if name.endswith("gate_proj"))
    if spec.method != "Full" and spec.hyperparameters.lora_dropout > 0:
        _, targeted = _lora_targets(spec)
        values += sum(m.in_features for name, m in layer if targeted(name))
    return values


def _lora_targets(spec: TrainOptions):
    """(rank, name → adapted?) as PEFT matches target_modules: a string is a regex over the whole module name, a
    list names module-name suffixes."""
    import re

    from ...models.vision import LANGUAGE_MODEL_TARGETS

    rank, targets = spec.hyperparameters.lora_rank, None
    if spec.init_adapter:
        adapter = json.loads((Path(spec.init_adapter) / "adapter_config.json").read_text())
        rank, targets = adapter["r"], adapter["target_modules"]
    elif spec.modality == "vision":
        targets = LANGUAGE_MODEL_TARGETS
    if targets is None or targets == "all-linear":
        return rank, lambda name: True
    if isinstance(targets, str):
        return rank, lambda name: re.fullmatch(targets, name) is not None
    return rank, lambda name: any(name == t or name.endswith("." + t) for t in targets)


def memory(spec: TrainOptions, rows: list[TokenRow], model: ModelFacts) -> dict:
    """Estimated peak accelerator memory of training, in bytes (an estimate: kernels, allocator and framework
    overheads vary; it errs on the high side). With d = 2 bytes for bfloat16, 4 for float32:

    weights   = parameters × d; QLoRA: linear weights × 0.5625 (NF4 + double-quantised scales) + the rest × 4
                (prepare_model_for_kbit_training upcasts the non-quantised parameters to float32)
    state     = LoRA/QLoRA: trainable × 16 (float32 weight, gradient, two Adam moments);
                Full: trainable × 3 × d (gradient, two Adam moments; the optimizer's temporaries come after the
                backward pass has freed the activations, so they do not add to this peak)
    activations, for the largest micro-batch of b rows of s = the longest kept row (packing: max_length) tokens
    (SFT padding-free: the b longest rows' tokens rather than b × s), over L layers of width h (DPO/ORPO:
    b = 2 × batch_size, chosen and rejected go through together; GRPO: s = prompt + max_completion_length):
                b × s × L × values kept per token and layer (`_layer_activations`; 17 × h when the layers are
                not found) × d
                + eager attention (use_fast_attention false, on the CPU; a GPU runs sdpa): 5 × heads × s² × b × L × d / 2
                + logits and their gradient in float32 (not with Liger's fused loss, device.uses_liger):
                  b × positions × vocab × 4 × 2, where positions = the trained tokens of the row with the most
                  (the core's SFT computes logits only where a token is learned, lean_sft.py; packed: the loss
                  share of s), GRPO the completion, else s
    peak      = (weights + state + activations) × 1.1
    """
    from ..device import device_is_cuda, uses_liger

    hp = spec.hyperparameters
    facts = model.facts
    d = 2 if facts["dtype"] == "bfloat16" else 4
    if spec.method == "QLoRA":
        weights = model.quantizable * NF4_BYTES + (facts["parameters"] - model.quantizable) * 4
    else:
        weights = facts["parameters"] * d
    trainable = facts["trainable_parameters"]
    state = trainable * 16 if spec.method != "Full" else trainable * 3 * d
    b = hp.batch_size * (2 if spec.trainer_type in ("dpo", "orpo") else 1)
    longest = max(r.kept for r in rows)
    if spec.trainer_type == "grpo":
        s = longest + completion_budget(hp)
        positions = completion_budget(hp)
    elif spec.trainer_type == "sft" and hp.packing:
        s = hp.max_length
        share = sum(r.trained_kept for r in rows) / max(sum(r.kept for r in rows), 1)
        positions = math.ceil(share * s)
    elif spec.trainer_type == "sft":
        s = longest
        positions = max(r.trained_kept for r in rows)
    else:
        s = longest
        positions = s
    layers, hidden = facts["num_layers"], facts["hidden_size"]
    tokens = b * s
    if spec.trainer_type == "sft" and hp.padding_free and not hp.packing:  # one row of the batch's real tokens
        tokens = sum(sorted(r.kept for r in rows)[-b:])
    activations = tokens * layers * (model.layer_activations or ACTIVATION_FACTOR * hidden / 2) * d
    if not hp.use_fast_attention and not device_is_cuda(spec):
        activations += EAGER_ATTENTION_FACTOR * model.heads * s * s * b * layers * d / 2
    if not uses_liger(spec):  # Liger's fused loss takes the logits a chunk at a time and never keeps them
        activations += b * positions * facts["vocab_size"] * 4 * 2
    return {"estimated_peak_bytes": round((weights + state + activations) * HEADROOM), "weights_bytes": round(weights),
            "training_state_bytes": round(state), "activations_bytes": round(activations)}
