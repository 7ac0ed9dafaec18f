"""Check (not a test: it needs CUDA and bitsandbytes), the QLoRA half of bench/train's GPU runs: the core trains a
QLoRA adapter (bitsandbytes 4-bit NF4 base, double-quantised, bf16 compute) on a tiny Llama that was first taught
the fast-engine fixtures' base answers, to give other answers; the loss must fall; the adapter is merged into the
full-precision base (`ftcore merge`), and the merged model must greedily say the taught answers. The merged model,
the adapter and the logs go into one tarball (a few MB) for the GGUF parity check on a machine without a GPU:

    bash bench/train/gpu.sh qlora                   (on the GPU machine; writes $OUT/qlora.tar.gz)
    bash bench/train/qlora_parity.sh qlora.tar.gz   (here: f16 GGUF in llama.cpp = transformers, token for token)
"""
from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "services" / "worker" / "test" / "fast-engine-fixtures"))
from build_tiny import ADAPTER_ANSWERS, K_QUANT_MODEL, MAX_NEW_TOKENS, PROMPTS, teach_base  # noqa: E402

from run import CORE  # noqa: E402


def ftcore(*args: str) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "ftcore", *args], cwd=CORE, capture_output=True, text=True)
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0:
        sys.exit(f"ftcore {args[0]} failed:\n{out.stderr[-4000:]}\n{events[-3:]}")
    return events


def main(work: Path, out: Path) -> None:
    import torch

    base, run = work / "base", work / "run"
    ftcore("make-tiny-model", "--output_dir", str(base), *K_QUANT_MODEL)
    teach_base(base, steps=20)
    train = work / "train.jsonl"
    train.write_text("".join(json.dumps({"messages": p + [{"role": "assistant", "content": a}]}) + "\n"
                             for _ in range(16) for p, a in zip(PROMPTS, ADAPTER_ANSWERS)))
    spec = {"base_model": str(base), "train_file": str(train), "output_dir": str(run), "method": "QLoRA",
            "trainer_type": "sft", "device": "cuda",
            "hyperparameters": dict(learning_rate=5e-3, batch_size=8, max_steps=60, max_length=256, lora_rank=8,
                                    lora_alpha=16, lora_dropout=0.0, warmup_ratio=0.0, logging_steps=5,
                                    save_strategy="no", seed=42, use_fast_attention=True)}
    (work / "spec.json").write_text(json.dumps(spec))
    events = ftcore("train", "--spec", str(work / "spec.json"))
    losses = [(e["step"], e["loss"]) for e in events if e["event"] == "progress" and e.get("loss") is not None]
    print(f"QLoRA on {torch.cuda.get_device_name()}, bitsandbytes NF4: loss by step {losses}")
    assert losses[-1][1] < 0.5 * losses[0][1], "QLoRA loss did not fall by half"
    ftcore("merge", "--base_model", str(base), "--adapter", str(run / "adapter"), "--output_dir", str(work / "merged"))
    prompts = work / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"messages": p}) + "\n" for p in PROMPTS))
    ftcore("generate", "--model", str(work / "merged"), "--input_file", str(prompts), "--output_file",
           str(work / "hf-merged.jsonl"), "--max_new_tokens", str(MAX_NEW_TOKENS), "--device", "cuda")
    said = [json.loads(line)["text"] for line in (work / "hf-merged.jsonl").read_text().splitlines()]
    for text, answer in zip(said, ADAPTER_ANSWERS):
        print(f"  merged says {text[:70]!r}")
        assert answer.startswith(text.strip()[:40]), f"the merged model did not learn {answer[:40]!r}: {text!r}"
    (work / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    with tarfile.open(out, "w:gz") as tar:
        for name in ("merged", "base", "hf-merged.jsonl", "events.jsonl", "spec.json", "prompts.jsonl"):
            tar.add(work / name, arcname=name)
        tar.add(run / "adapter", arcname="adapter")
    print(f"wrote {out} ({out.stat().st_size / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
