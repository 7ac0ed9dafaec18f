"""The core's processes leave out what transformers and peft would import eagerly and nothing of ours uses on the
machine at hand (ftcore/lean_imports.py): scikit-learn always, bitsandbytes without CUDA. Checked in a fresh
interpreter, where nothing else has imported them yet."""
from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = r"""
import json, sys
import ftcore  # what every core process imports first (python -m ftcore)
import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM
import transformers.generation.candidate_generator  # where transformers reaches for scikit-learn

config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                     num_attention_heads=2, num_key_value_heads=2)
model = get_peft_model(LlamaForCausalLM(config), LoraConfig(r=2, target_modules=["q_proj", "v_proj"]))
model(input_ids=torch.tensor([[1, 2, 3]]), labels=torch.tensor([[1, 2, 3]])).loss.backward()
loaded = [name for name in ("sklearn", "bitsandbytes") if name in sys.modules]
grads = [p.grad is not None for n, p in model.named_parameters() if "lora_" in n]
from sklearn.metrics import accuracy_score  # the core's own metrics still import it where they use it
print(json.dumps({"loaded": loaded, "lora_trained": bool(grads) and all(grads), "accuracy": accuracy_score([1, 0], [1, 1])}))
"""


def probe() -> dict:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_without_cuda_a_lora_model_trains_with_neither_scikit_learn_nor_bitsandbytes_imported():
    result = probe()
    assert result["loaded"] == []
    assert result["lora_trained"] is True
    assert result["accuracy"] == 0.5
