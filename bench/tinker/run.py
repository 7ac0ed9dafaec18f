"""Benchmark (not a test): what a Tinker training step costs through our API against the same step run directly in
the core. One loop with the official SDK against a running stack (forward_backward + optim_step on 8 sequences of
128 tokens, the next call submitted before the last ends, as the SDK does), and, in the same run, the baseline: the
same batch and steps in the core's own TrainingSession in a process of its own, on the same model folder. Prints both
per-step times and the ratio; the difference is the API, the queue of call rows, the protobuf and the process hop.
Also the worker's idle share over the timed steps: the part of their wall time in which the worker held no call
(1 − the growth of ftp_tinker_call_duration_seconds_sum, taken to answered, over the steps' time), read from the
stack's /metrics before and after.

    bash scripts/start.sh                      # the stack, with the default model (smollm2-135m)
    test/tools/.venv/bin/python bench/tinker/run.py --model-dir data/models/smollm2-135m [--steps 10]
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

DIRECT = """
import json, sys, time
from ftcore.tinker.lora import LoraSpec
from ftcore.tinker.session import AdamParams, Datum, TrainingSession
job = json.load(sys.stdin)
session = TrainingSession.create(LoraSpec(base_model=job["model_dir"], rank=job["rank"], seed=0), "auto")
batch = [Datum(model_input=d["tokens"][:-1], loss_fn_inputs={"target_tokens": d["tokens"][1:], "weights": [1.0] * (len(d["tokens"]) - 1)}) for d in job["batch"]]
times = []
for step in range(job["warmup"] + job["steps"]):
    started = time.perf_counter()
    session.forward_backward(batch, "cross_entropy")
    session.optim_step(AdamParams(learning_rate=1e-4))
    if step >= job["warmup"]:
        times.append(time.perf_counter() - started)
print(json.dumps(times))
"""


def busy_seconds(url: str) -> float:
    """Seconds the stack's workers spent holding Tinker calls, so far (every operation and outcome)."""
    import urllib.request

    text = urllib.request.urlopen(f"{url}/metrics", timeout=30).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("ftp_tinker_call_duration_seconds_sum{"))


def through_api(args, batch) -> tuple[list[float], float]:
    import tinker
    from tinker import types

    service = tinker.ServiceClient(base_url=args.url, api_key=args.api_key)
    training = service.create_lora_training_client(base_model=args.model, rank=args.rank, seed=0).result()
    data = [types.Datum(model_input=types.ModelInput.from_ints(d["tokens"][:-1]),
                        loss_fn_inputs={"target_tokens": d["tokens"][1:], "weights": [1.0] * (len(d["tokens"]) - 1)}) for d in batch]
    times = []
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            busy_before = busy_seconds(args.url)
        started = time.perf_counter()
        fwd = training.forward_backward(data, "cross_entropy")
        opt = training.optim_step(types.AdamParams(learning_rate=1e-4))
        fwd.result()
        opt.result()
        if step >= args.warmup:
            times.append(time.perf_counter() - started)
    idle = 1 - (busy_seconds(args.url) - busy_before) / sum(times)
    service.close("success").result()
    return times, idle


def direct(args, batch) -> list[float]:
    job = {"model_dir": str(Path(args.model_dir).resolve()), "rank": args.rank, "batch": batch, "warmup": args.warmup, "steps": args.steps}
    out = subprocess.run(["uv", "run", "--frozen", "python", "-c", DIRECT], cwd=ROOT / "core", input=json.dumps(job),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", required=True, help="the model folder the stack serves as --model")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--url", default="http://127.0.0.1:8005")
    parser.add_argument("--api-key", default="tml-local", help="tml-<API key> (anything with AUTH_MODE=none)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--rank", type=int, default=32)
    args = parser.parse_args()
    rng = random.Random(0)
    batch = [{"tokens": [rng.randrange(100, 10_000) for _ in range(args.seq + 1)]} for _ in range(args.batch)]
    api, idle = through_api(args, batch)
    core = direct(args, batch)
    a, c = statistics.median(api), statistics.median(core)
    print(f"{args.batch} x {args.seq} tokens, LoRA rank {args.rank}, {args.steps} steps after {args.warmup} warm-up, median per step:")
    print(f"  through the Tinker API (SDK, stack, worker, core): {a:.3f} s")
    print(f"  the core's TrainingSession directly (baseline):     {c:.3f} s")
    print(f"  ratio {a / c:.3f} (overhead {100 * (a / c - 1):.1f}%)")
    print(f"  the worker held no call for {100 * idle:.1f}% of the timed steps' wall time")


if __name__ == "__main__":
    sys.exit(main())
