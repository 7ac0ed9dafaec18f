"""The core's processes leave out what transformers and peft would import eagerly and nothing of ours uses on the
machine at hand (ftcore/lean_imports.py): scikit-learn and scipy always, bitsandbytes without CUDA. Checked in a fresh
interpreter, where nothing else has imported them yet."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

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
loaded = [name for name in ("sklearn", "scipy", "bitsandbytes") if name in sys.modules]
grads = [p.grad is not None for n, p in model.named_parameters() if "lora_" in n]
from sklearn.metrics import accuracy_score  # the core's own metrics still import it where they use it
print(json.dumps({"loaded": loaded, "lora_trained": bool(grads) and all(grads), "accuracy": accuracy_score([1, 0], [1, 1])}))
"""


def probe() -> dict:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_without_cuda_a_lora_model_trains_with_none_of_scikit_learn_scipy_bitsandbytes_imported():
    result = probe()
    assert result["loaded"] == []
    assert result["lora_trained"] is True
    assert result["accuracy"] == 0.5


def test_only_the_gguf_command_runs_transformers_without_its_torch_side():
    code = ("import sys; from ftcore import lean_imports; lean_imports.for_command(sys.argv[1]); "
            "from transformers.utils import is_torch_available; print(is_torch_available())")
    env = {k: v for k, v in os.environ.items() if k != "USE_TORCH"}
    seen = {command: subprocess.run([sys.executable, "-c", code, command], env=env, capture_output=True, text=True,
                                    timeout=120).stdout.strip() for command in ("gguf", "train", "merge")}
    assert seen == {"gguf": "False", "train": "True", "merge": "True"}


@pytest.mark.slow
def test_the_gguf_command_without_transformers_torch_side_writes_the_same_bytes(tiny_model, tmp_path):
    """`python -m ftcore gguf` runs with USE_TORCH=0 (lean_imports.for_command): the model's and an adapter's files
    and Modelfiles are byte for byte what the same conversion writes in this process, where transformers has torch."""
    import torch
    from helpers import captured_events, run_cli
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from ftcore.export import gguf as gguf_export

    torch.manual_seed(0)
    adapter = tmp_path / "adapter"
    get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model),
                   LoraConfig(r=4, lora_alpha=8, init_lora_weights=False, target_modules=["q_proj", "v_proj"])
                   ).save_pretrained(adapter)
    for name, extra in [("model", {"quantization": "q8_0"}), ("adapter", {"adapter": str(adapter)})]:
        here, apart = tmp_path / f"{name}-here" / "out.gguf", tmp_path / f"{name}-cli" / "out.gguf"
        with captured_events():
            gguf_export.run(gguf_export.Options(model=tiny_model, output_file=str(here), **extra))
        spec = tmp_path / f"{name}.json"
        spec.write_text(json.dumps({"model": tiny_model, "output_file": str(apart), **extra}))
        out = run_cli(["gguf", "--spec", str(spec)])
        assert out.returncode == 0, out.stderr[-3000:]
        assert "PyTorch" not in out.stderr  # transformers' notice that it found none is silenced, not printed
        assert apart.read_bytes() == here.read_bytes(), name
        assert (apart.parent / "Modelfile").read_text() == (here.parent / "Modelfile").read_text(), name


@pytest.mark.slow
def test_a_script_running_gguf_then_another_command_in_one_process_still_has_torch(tiny_model, tmp_path):
    """cli.main runs several commands in one process for scripts (the fast engine's fixture builders: a gguf, then a
    generate); the gguf's lean setting belongs to `python -m ftcore` alone and must not reach the next command."""
    spec = tmp_path / "gguf.json"
    spec.write_text(json.dumps({"model": tiny_model, "output_file": str(tmp_path / "out" / "model.gguf")}))
    code = ("import sys; from ftcore.cli import main; assert main(['gguf', '--spec', sys.argv[1]]) == 0; "
            "from transformers import AutoModelForCausalLM; AutoModelForCausalLM.from_pretrained(sys.argv[2]); print('ok')")
    env = {k: v for k, v in os.environ.items() if k != "USE_TORCH"}
    out = subprocess.run([sys.executable, "-c", code, str(spec), tiny_model], env=env, capture_output=True, text=True,
                         timeout=300)
    # cli.main leaves the process's stdout pointing at stderr (its events have their own descriptor)
    assert out.returncode == 0 and out.stderr.strip().splitlines()[-1] == "ok", out.stderr[-3000:]
