"""ftcore: the ML core of the fine-tuning pipeline (train, merge, generate, make-tiny-model, import-model).

Driven by the TypeScript workers: one JSON spec file in, one JSON event per stdout line out.
"""

import os

# The core trains on shared CPUs beside other jobs. OpenMP threads that spin while they wait take those cores from
# whoever holds them: measured on a loaded 2-core machine, a Gemma 3 270M LoRA step took 4× longer with torch's 2
# spinning threads than with 1, and the same as 1 with passive waiting (which costs nothing on an idle machine).
# Set before torch is imported (libgomp reads it once); an explicit setting in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Before anything imports transformers or peft: keep the optional libraries they import eagerly and the core never
# uses out of every process (lean_imports.py says which and what each cost).
from .lean_imports import install as _install_lean_imports  # noqa: E402

_install_lean_imports()
