"""Optional libraries that transformers and peft import as soon as they are installed, kept out of the core's
processes where nothing can use them. Every training, merge, serve or GGUF process paid for them before its first
step: a tiny LoRA run on the CPU took 11.3 s of CPU, 4.1 s of it the first two imports below (measured for #55).

- scikit-learn: `transformers.generation.candidate_generator` imports `sklearn.metrics` (and with it scipy.stats)
  whenever scikit-learn is installed, for assisted decoding's confidence threshold, which the core never uses
  (1.7 s). scikit-learn stays installed: the core's own metrics import it where they compute with it (evaluation/metrics.py).
- scipy: `transformers.modeling_utils` imports the object-detection losses, which import `scipy.optimize` whenever
  scipy is installed, for DETR's matching (0.3 s). Only detection, segmentation and protein models use scipy in
  transformers; the core trains none of them.
- bitsandbytes: peft's LoRA layer dispatch imports bitsandbytes whenever it is installed, to recognise its quantized
  layers, and bitsandbytes runs `torch.compile` at import, which loads torch's inductor (2.1 s). Its quantized layers
  exist only on CUDA (QLoRA is refused elsewhere, train/validate.py), so on a machine without CUDA peft is told that
  bitsandbytes is absent; with CUDA nothing changes.

And one command needs no model class at all: `gguf` reads a folder's config and tokenizer through transformers and its
weights through safetensors, so it runs with transformers' `USE_TORCH=0` (transformers then loads none of its torch
side: 6.7 → 3.4 s of CPU for a tiny model's conversion, the same bytes written). `for_command` is called by
`python -m ftcore` (__main__.py), which runs one command and exits, never by `cli.main`: scripts call that for several
commands in one process (build_gemma.py: a gguf, then a generate, which would find transformers without torch), and
the processes they start would inherit the setting.

The first three are flags the libraries read (transformers' `_sklearn_available` and `_scipy_available`, the
`is_bnb_*available` names peft's LoRA module imported), set right after that module is executed, by a finder on
`sys.meta_path`: the core imports none of these libraries before it needs it, and this changes no import order. `install()` runs once, from ftcore/__init__.py.
"""
from __future__ import annotations

import os
import sys
from importlib.abc import MetaPathFinder
from types import ModuleType
from typing import Callable


def _no_sklearn_or_scipy_for_transformers(module: ModuleType) -> None:
    module._sklearn_available = False
    module._scipy_available = False


def _no_bitsandbytes_for_peft_without_cuda(module: ModuleType) -> None:
    import torch

    if not torch.cuda.is_available():
        module.is_bnb_available = module.is_bnb_4bit_available = lambda: False


FIXES: dict[str, Callable[[ModuleType], None]] = {
    "transformers.utils.import_utils": _no_sklearn_or_scipy_for_transformers,
    "peft.tuners.lora.model": _no_bitsandbytes_for_peft_without_cuda,
}


class _AfterImport(MetaPathFinder):
    """Finds nothing itself: for a module in FIXES, takes the spec the other finders give and has its loader apply
    the fix once the module's code has run."""

    def find_spec(self, name, path, target=None):
        fix = FIXES.get(name)
        if fix is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            fix(module)

        loader.exec_module = exec_module  # this spec's own loader instance
        return spec


def install() -> None:
    if not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())


# Commands that load no model through transformers (config, tokenizer and safetensors only).
WITHOUT_TORCH_MODELS = {"gguf"}


def for_command(command: str) -> None:
    if command in WITHOUT_TORCH_MODELS and "transformers" not in sys.modules:
        os.environ.setdefault("USE_TORCH", "0")
        # transformers' notice that it found no PyTorch: true and intended here.
        os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
