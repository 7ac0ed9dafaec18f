"""Benchmark (not a test): how close the pre-flight memory estimate comes to the memory training really takes, on
the imported Gemma 3 270M on CPU. For each configuration it makes the report (estimated_peak_bytes), then trains a
few real steps in a fresh process and reads that process's peak resident memory; the baseline, in the same run, is
the peak of a process that imports the same libraries and loads nothing, so the ratio compares the estimate with
what training added: estimate / (peak − baseline). It also prints how long the report took against the training.

    cd core && uv sync --frozen --extra gemma && uv run --frozen python ../bench/preflight/run.py [--steps 3]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))
from run import CORE, WORK as TRAIN_WORK, conversations, ensure_model  # noqa: E402  (bench/train/run.py)

WORK = TRAIN_WORK.parent / "preflight"
MIB = 2**20

# What one process peaks at: run `ftcore <args>` (or only the imports) in-process, then print ru_maxrss (KiB).
PEAK = """
import resource, sys
sys.argv = ["ftcore", *sys.argv[1:]]
if len(sys.argv) > 1:
    from ftcore.cli import main
    code = main(sys.argv[1:])
else:
    import torch, transformers, trl, peft  # noqa: F401  the libraries a training process imports
    code = 0
print(f"PEAK_KIB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
sys.exit(code)
"""

CONFIGS = {
    "LoRA r16, batch 4, max_length 512, sdpa": dict(method="LoRA", batch_size=4, max_length=512, use_fast_attention=True),
    "LoRA r16, batch 4, max_length 512, eager": dict(method="LoRA", batch_size=4, max_length=512, use_fast_attention=False),
    "Full, batch 2, max_length 256, sdpa": dict(method="Full", batch_size=2, max_length=256, use_fast_attention=True),
}


def peak_bytes(*args: str) -> tuple[int, float]:
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", PEAK, *args], cwd=CORE, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(args) or 'imports'} failed:\n{out.stderr[-3000:]}")
    kib = int(next(line.split()[1] for line in out.stderr.splitlines() if line.startswith("PEAK_KIB")))
    return kib * 1024, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="an imported Gemma 3 270M folder (default: import into bench/out/train)")
    parser.add_argument("--steps", type=int, default=3, help="optimizer steps each training run takes")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    model = ensure_model(args.model)
    train = WORK / "train.jsonl"
    train.write_text("".join(json.dumps(c) + "\n" for c in conversations(64, seed=7)))

    baseline, _ = peak_bytes()
    print(f"Gemma 3 270M on CPU, {args.steps} steps per run; libraries alone peak at {baseline / MIB:.0f} MiB (baseline)")
    for name, config in CONFIGS.items():
        method = config.pop("method")
        hp = dict(learning_rate=1e-4, gradient_accumulation_steps=1, max_steps=args.steps, lora_rank=16,
                  logging_steps=1, save_strategy="no", seed=7, **config)
        spec = {"base_model": str(model), "train_file": str(train), "output_dir": str(WORK / "run"), "method": method,
                "trainer_type": "sft", "device": "cpu", "hyperparameters": hp}
        spec_file, report_file = WORK / "spec.json", WORK / "report.json"
        spec_file.write_text(json.dumps({**spec, "output_file": str(report_file)}))
        _, report_seconds = peak_bytes("preflight", "--spec", str(spec_file))
        estimate = json.loads(report_file.read_text())["memory"]["estimated_peak_bytes"]
        spec_file.write_text(json.dumps(spec))
        peak, train_seconds = peak_bytes("train", "--spec", str(spec_file))
        added = peak - baseline
        print(f"  {name:42s} estimate {estimate / MIB:7.0f} MiB   measured {added / MIB:7.0f} MiB above the baseline "
              f"(peak {peak / MIB:.0f})   ratio {estimate / added:5.2f}   report {report_seconds:5.1f} s vs training "
              f"{train_seconds:5.1f} s")


if __name__ == "__main__":
    main()
