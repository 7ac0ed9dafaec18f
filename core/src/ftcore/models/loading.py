"""The one place that loads a model for inference: a base/merged folder, optionally with a PEFT adapter."""
from __future__ import annotations


def load_for_inference(model_dir: str, adapter_dir: str | None = None, device: str = "auto"):
    """Returns (model, tokenizer) in eval mode. The tokenizer comes from the adapter folder when given
    (training saves it there with the chat template), else from the model folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .vision import is_vision_model, load_model

    target = "cuda" if device != "cpu" and torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if target == "cuda" else torch.float32
    load = load_model if is_vision_model(model_dir) else AutoModelForCausalLM.from_pretrained
    model = load(model_dir, dtype=dtype).to(target)
    tokenizer = AutoTokenizer.from_pretrained(adapter_dir or model_dir)
    if adapter_dir:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter_dir)
    model.eval()
    return model, tokenizer


def untie_adapted_output_layer(model) -> bool:
    """Gives the output layer its own copy of the weight it shares with the input embeddings (tie_word_embeddings:
    SmolLM2, small Qwen3s) when a PEFT adapter adapts it (a Tinker run's train_unembed, the SDK's default); returns
    whether it did. The model computes the same, but two things go wrong on the shared matrix: a merge adds the
    output layer's delta to it, changing every input embedding too, and transformers' tie_weights (lm-eval calls it
    on the model it is given) cannot assign a weight to PEFT's wrapper ("attribute 'weight' already exists"). The
    config then says untied, so a saved model keeps lm_head's weight of its own."""
    import torch

    base = model.get_base_model()
    output, inputs = base.get_output_embeddings(), base.get_input_embeddings()
    layer = getattr(output, "base_layer", None)  # PEFT wraps an adapted layer
    if layer is None or inputs is None or layer.weight is not inputs.weight:
        return False
    layer.weight = torch.nn.Parameter(layer.weight.detach().clone(), requires_grad=False)
    for config in {id(c): c for c in (base.config, base.config.get_text_config())}.values():
        config.tie_word_embeddings = False
    return True
