"""Benchmark (not a test), the GPU half of bench/train: SFT LoRA r16 on every linear layer of a random-init model of
Llama 3.2 1B's shape (1.24 B parameters, 128k vocabulary), bf16, fixed seed, the same generated conversations for
each contender, in one run:

  - plain TRL: trl_baseline.py, a TRL SFTTrainer script with TRL's and torch's defaults (gradient checkpointing,
    padded batches, sdpa, bf16 autocast);
  - the core: `python -m ftcore train` with padding_free and use_fast_attention, as a job would run it (flex
    attention over the packed rows, Liger's kernels, gradient checkpointing only when pre-flight says memory needs
    it), and variants of it (--only: core-sdpa, core-padded, core-no-cudnn);
  - Unsloth, where the `unsloth` package is importable (unsloth_baseline.py).

Each prints tokens/s over the steady steps (after --warmup steps: Triton compiles its kernels in the first ones) and
MFU against a bf16 matmul peak measured in the same run; LoRA training counts 4 × matmul parameters per trained
token (run.flops_per_token), padding excluded. Then a torch profile of the core's steps says where the time goes.

    bash bench/train/gpu.sh        (on a machine with PyTorch and CUDA; installs the wheels it carries in .whl)

`--shape 8b` (#30): Llama 3.1 8B's shape at NeMo AutoModel's published LoRA settings (2 × 4,096-token rows packed
full, 16 micro-batches a step), the core alone, tokens/s and MFU against the measured and the datasheet bf16 peak, and
the ratio to NeMo's 12,473 tokens/s on one H100 (scripts/gpu-check.sh run train bench-train-8b).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from run import CORE, conversations, flops_per_token  # noqa: E402

WORK = Path(os.environ.get("BENCH_WORK", "/tmp/bench-train-gpu"))
# Llama 3.2 1B (meta-llama/Llama-3.2-1B config.json), random weights
LLAMA_3_2_1B = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                    num_key_value_heads=8, head_dim=64, vocab_size=128256, max_position_embeddings=8192,
                    rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=True)
# Llama 3.1 8B (meta-llama/Llama-3.1-8B config.json, rope scaling left out: it changes no FLOP), random weights
LLAMA_3_1_8B = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                    num_key_value_heads=8, head_dim=128, vocab_size=128256, max_position_embeddings=8192,
                    rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)
SHAPES = {"1b": ("Llama 3.2 1B", LLAMA_3_2_1B), "8b": ("Llama 3.1 8B", LLAMA_3_1_8B)}
# Dense bf16 tensor-core peaks of the datasheets (TFLOP/s), which published MFU figures (NeMo's) are against.
DATASHEET_BF16 = {"H100": 989.4, "H200": 989.4}
# NeMo AutoModel's LoRA figure for Llama 3 8B on one H100 (docs: performance summary): GBS 32, MBS 2, GA 16,
# sequence 4,096, full sequences without padding; 10.51 s a step, 402 model TFLOP/s, 12,472.87 tokens/s.
NEMO_8B = {"tokens_per_second": 12472.87, "batch": 2, "grad_accum": 16, "max_length": 4096}


def bf16_peak_tflops(size: int = 8192, repeats: int = 10, trials: int = 5) -> float:
    """The best of a few timed bf16 matmuls on the GPU: the peak this card reaches in this run."""
    import torch

    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    best = 0.0
    for _ in range(trials):
        start = time.perf_counter()
        for _ in range(repeats):
            a @ b
        torch.cuda.synchronize()
        best = max(best, 2 * size**3 * repeats / (time.perf_counter() - start) / 1e12)
    return best


def make_model(train: Path, shape: str = "1b") -> Path:
    """The core's tokenizer (make-tiny-model: byte-level BPE on the bench text, ChatML with generation markers) with
    random bf16 weights of the shape, made on the GPU and saved once per machine (an 8B takes a minute to write; the
    runs then only load it); the vocabulary projection keeps its real 128k rows."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    folder = WORK / f"llama-{shape}-shape"
    if (folder / "config.json").is_file() and any(folder.glob("*.safetensors")):
        return folder
    subprocess.run([sys.executable, "-m", "ftcore", "make-tiny-model", "--output_dir", str(folder),
                    "--architecture", "llama", "--vocab_size", "4000", "--text_files", json.dumps([str(train)])],
                   cwd=CORE, check=True, stdout=subprocess.DEVNULL)
    config = AutoConfig.from_pretrained(folder)
    for key, value in SHAPES[shape][1].items():
        setattr(config, key, value)
    config.initializer_range = 0.02
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(folder)
    del model
    torch.cuda.empty_cache()
    return folder


def steady(points: list[tuple[int, float, float]], warmup: int) -> float:
    """tokens/s between the end of step `warmup` and the last step; points are (step, seconds, tokens) since the
    start of training."""
    first = next(p for p in points if p[0] >= warmup)
    last = points[-1]
    return (last[2] - first[2]) / (last[1] - first[1])


# The core with sdpa instead of flex attention over its padding-free rows: the whole (sum of lengths)² score matrix.
SDPA = ("import sys, ftcore.train.configs as c; kw = c.model_kwargs; "
        "c.model_kwargs = lambda spec: {**kw(spec), 'attn_implementation': 'sdpa'}; "
        "from ftcore.cli import main; sys.exit(main(sys.argv[1:]))")
# The same with torch's cuDNN attention backend off (then the memory-efficient kernel takes the mask).
NO_CUDNN_SDPA = "import torch; torch.backends.cuda.enable_cudnn_sdp(False); " + SDPA


def run_core(spec_file: Path, warmup: int, prelude: str | None = None) -> dict:
    command = ["-c", prelude, "train"] if prelude else ["-m", "ftcore", "train"]
    out = subprocess.run([sys.executable, *command, "--spec", str(spec_file)], cwd=CORE,
                         capture_output=True, text=True)
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0:
        sys.exit(f"core train failed:\n{out.stderr[-4000:]}\n{events[-3:]}")
    steps = [e for e in events if e["event"] == "progress" and e.get("loss") is not None]
    # tokens_per_second is tokens since the start of training over the time since then: that time is tokens / rate
    points = [(e["step"], e["extra"]["trained_tokens"] / e["tokens_per_second"], e["extra"]["trained_tokens"])
              for e in steps]
    notes = [e["message"] for e in events if e["event"] == "log"]
    return {"tokens_per_second": steady(points, warmup), "loss": steps[-1]["loss"], "notes": notes}


def run_script(script: str, spec_file: Path, warmup: int) -> dict | None:
    out = subprocess.run([sys.executable, str(Path(__file__).parent / script), str(spec_file)], cwd=CORE,
                         capture_output=True, text=True)
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith('{"')]  # not the Trainer's dicts
    if out.returncode != 0 or not lines:
        print(f"{script} failed:\n{out.stderr[-4000:]}")
        return None
    points = [(p["step"], p["seconds"], p["tokens"]) for p in lines if "step" in p]
    return {"tokens_per_second": steady(points, warmup), "loss": lines[-1]["loss"]}


def profile(spec_file: Path, steps: int = 3) -> None:
    """The core's trainer (run.setup, as `ftcore train` builds it) under torch.profiler for a few steady steps: the
    CUDA kernels that take the time, grouped by name."""
    from torch.profiler import ProfilerActivity, profile as torch_profile
    from transformers import TrainerCallback

    from ftcore.train.memory import memory_plan
    from ftcore.train.run import _preflight
    from ftcore.train.setup import setup
    from ftcore.train.spec import Options
    from ftcore.specs import from_dict
    from ftcore.train.validate import validate

    spec = from_dict(Options, json.loads(spec_file.read_text()))
    spec.hyperparameters.max_steps = 5 + steps
    train, test, mode = validate(spec)
    made = _preflight(spec, train, test, mode)
    trainer, _, _ = setup(spec, train, test, mode, memory_plan(spec, made["memory"] if made else None))
    prof = torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])

    class Window(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step == 5:
                prof.__enter__()

        def on_train_end(self, args, state, control, **kwargs):
            prof.__exit__(None, None, None)

    trainer.add_callback(Window())
    trainer.train()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=18, max_name_column_width=60))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="optimizer steps per run")
    parser.add_argument("--warmup", type=int, default=5, help="steps left out of tokens/s")
    parser.add_argument("--batch", type=int, default=16, help="conversations per step")
    parser.add_argument("--most-sentences", type=int, default=160,
                        help="answers have 1 to this many sentences (~12 tokens each), so rows of ~30 to 2000 tokens")
    parser.add_argument("--max-length", type=int, default=2048)
    parser.add_argument("--only", default="trl,core,unsloth", help="contenders, comma-separated")
    parser.add_argument("--profile", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--profile-only", help=argparse.SUPPRESS)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="1b",
                        help="8b: Llama 3.1 8B at NeMo's LoRA settings (2 × 4,096-token packed rows, 16 accumulated "
                             "micro-batches a step), the core alone, 12 steps unless --steps says otherwise")
    args = parser.parse_args()
    if args.profile_only:
        return profile(Path(args.profile_only))
    import torch

    grad_accum, packing = 1, False
    if args.shape == "8b":  # NeMo's settings; rows packed full, as its "full sequences without padding"
        args.batch, grad_accum, args.max_length = NEMO_8B["batch"], NEMO_8B["grad_accum"], NEMO_8B["max_length"]
        packing = True
        args.steps = args.steps if args.steps != 30 else 12
        args.warmup = min(args.warmup, 3)
        args.only = args.only if args.only != "trl,core,unsloth" else "core"
    WORK.mkdir(parents=True, exist_ok=True)
    train = WORK / "train.jsonl"
    train.write_text("".join(json.dumps(c) + "\n" for c in conversations(2000, seed=42, most_sentences=args.most_sentences)))
    model = make_model(train, args.shape)
    hp = dict(learning_rate=2e-4, batch_size=args.batch, gradient_accumulation_steps=grad_accum, max_steps=args.steps,
              max_length=args.max_length, lora_rank=16, lora_alpha=16, lora_dropout=0.0, warmup_ratio=0.0,
              lr_scheduler_type="linear", max_grad_norm=1.0, adam_beta1=0.9, adam_beta2=0.999, logging_steps=1,
              save_strategy="no", seed=42, padding_free=not packing, packing=packing, use_fast_attention=True)
    spec = {"base_model": str(model), "train_file": str(train), "output_dir": str(WORK / "core-run"), "method": "LoRA",
            "trainer_type": "sft", "device": "cuda", "hyperparameters": hp}
    spec_file = WORK / "spec.json"
    spec_file.write_text(json.dumps(spec))

    peak = bf16_peak_tflops()
    only = args.only.split(",")
    results = {}
    if "trl" in only:
        results["TRL SFTTrainer (defaults)"] = run_script("trl_baseline.py", spec_file, args.warmup)
    if "core" in only:
        results["ftcore train"] = run_core(spec_file, args.warmup)
    if "core-sdpa" in only:
        results["ftcore, sdpa"] = run_core(spec_file, args.warmup, SDPA)
    if "core-padded" in only:
        padded = WORK / "spec-padded.json"
        padded.write_text(json.dumps({**spec, "hyperparameters": {**hp, "padding_free": False}}))
        results["ftcore, padded batches"] = run_core(padded, args.warmup)
    if "core-no-cudnn" in only:
        results["ftcore, no cuDNN sdpa"] = run_core(spec_file, args.warmup, NO_CUDNN_SDPA)
    if "unsloth" in only:
        import importlib.util

        if importlib.util.find_spec("unsloth") is None:
            print("Unsloth: the unsloth package is not installed here (see bench/train/README.md)")
        else:
            results["Unsloth"] = run_script("unsloth_baseline.py", spec_file, args.warmup)
    peak = max(peak, bf16_peak_tflops())
    per_token = flops_per_token(model)
    name = torch.cuda.get_device_name()
    datasheet = next((v for k, v in DATASHEET_BF16.items() if k in name), None)
    rows = f"{args.batch} rows × {grad_accum} micro-batches" if grad_accum > 1 else f"{args.batch} conversations"
    print(f"{name}: bf16 matmul peak {peak:.0f} TFLOP/s (8192³, best of the run; datasheet {datasheet or '?'}); "
          f"{SHAPES[args.shape][0]} shape, {args.steps} steps × {rows}, max_length {args.max_length}"
          f"{' packed' if packing else ''}, LoRA r16 all linear, tokens/s over steps {args.warmup + 1}–{args.steps}")
    for name, r in results.items():
        if r is None:
            print(f"  {name:26s} did not run")
            continue
        mfu = r["tokens_per_second"] * per_token / (peak * 1e12)
        sheet = (f" ({r['tokens_per_second'] * per_token / (datasheet * 1e12):.1%} of the datasheet)"
                 if datasheet else "")
        print(f"  {name:26s} {r['tokens_per_second']:9.0f} tokens/s   final loss {r['loss']:.4f}   MFU {mfu:6.1%}{sheet}")
    if args.shape == "8b" and results.get("ftcore train"):
        print(f"  core / NeMo AutoModel's published {NEMO_8B['tokens_per_second']:,.0f} tokens/s: "
              f"{results['ftcore train']['tokens_per_second'] / NEMO_8B['tokens_per_second']:.2f}×")
    base, ours = results.get("TRL SFTTrainer (defaults)"), results.get("ftcore train")
    if base and ours:
        print(f"  core / TRL {ours['tokens_per_second'] / base['tokens_per_second']:.2f}× (target ≥ 1.5×)   "
              f"loss difference {abs(ours['loss'] - base['loss']) / base['loss']:.2%}")
    if ours:
        print("  core: " + (" | ".join(n for n in ours["notes"] if "checkpointing" in n) or "no gradient checkpointing"))
    if args.profile and "core" in only:
        sys.stdout.flush()
        subprocess.run([sys.executable, __file__, "--profile-only", str(spec_file)], cwd=CORE, check=False)


if __name__ == "__main__":
    main()
