"""Builds the fast-engine test fixtures with the core, in one Python process (imports once): a tiny model, its
f16/q8_0 GGUFs, a LoRA adapter (random, so it moves the logits a lot), the merged model, the adapter as GGUF, and
transformers' greedy token ids for every prompt on the base and on the merged model."""
import json
import sys
from pathlib import Path

from ftcore.cli import main

PROMPTS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Say hi."}],
    [{"role": "user", "content": "How many legs has a cat?"}, {"role": "assistant", "content": "Four."},
     {"role": "user", "content": "And a dog? Answer with a number."}],
    [{"role": "user", "content": "The quick brown fox"}],
]
MAX_NEW_TOKENS = 40


def cli(*args: str) -> None:
    if main(list(args)) != 0:
        raise SystemExit(f"ftcore {args[0]} failed")


def random_lora(base: Path, out: Path) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(1)
    model = AutoModelForCausalLM.from_pretrained(base)
    config = LoraConfig(r=4, lora_alpha=8, init_lora_weights=False, task_type="CAUSAL_LM",
                        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    get_peft_model(model, config).save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)


def build(root: Path) -> None:
    tiny, adapter, merged = root / "tiny", root / "adapter", root / "merged"
    prompts = root / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"messages": p}) + "\n" for p in PROMPTS))
    cli("make-tiny-model", "--output_dir", str(tiny), "--seed", "3")
    for q in ("f16", "q8_0"):
        cli("gguf", "--model", str(tiny), "--output_file", str(root / f"tiny-{q}" / "model.gguf"), "--quantization", q)
    random_lora(tiny, adapter)
    cli("merge", "--base_model", str(tiny), "--adapter", str(adapter), "--output_dir", str(merged))
    cli("gguf", "--model", str(tiny), "--adapter", str(adapter), "--output_file", str(root / "adapter.gguf"))
    cli("gguf", "--model", str(merged), "--output_file", str(root / "merged-f16" / "model.gguf"),
        "--quantization", "f16")
    for name, model in (("base", tiny), ("merged", merged)):
        cli("generate", "--model", str(model), "--input_file", str(prompts), "--output_file",
            str(root / f"hf-{name}.jsonl"), "--max_new_tokens", str(MAX_NEW_TOKENS), "--device", "cpu")


if __name__ == "__main__":
    build(Path(sys.argv[1]))
