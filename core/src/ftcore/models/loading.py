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
