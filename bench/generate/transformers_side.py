"""The transformers half of bench/generate: imports Gemma 3 270M once (cached under bench/out), writes its q8_0 GGUF,
and times the core's greedy batch generation (fp32, CPU) on the given prompts. Prints one JSON object with the timing
(after the core events a first run's import and export print)."""
import json
import os
import sys
import time
from pathlib import Path

from ftcore.cli import main
from ftcore.inference.generate import generate_token_ids
from ftcore.models.loading import load_for_inference


def cli(*args: str) -> None:
    if main(list(args)) != 0:
        raise SystemExit(f"ftcore {args[0]} failed")


def prepare(out: Path) -> tuple[Path, Path]:
    folder, gguf = out / "gemma-hf", out / "gemma-q8_0" / "model.gguf"
    if not (folder / "config.json").is_file():
        cli("import-model", "--source", "gemma3-270m", "--output_dir", str(folder))
    if not gguf.is_file():
        cli("gguf", "--model", str(folder), "--output_file", str(gguf), "--quantization", "q8_0")
    return folder, gguf


def bench(folder: Path, prompts: list, max_new_tokens: int, batch_size: int) -> dict:
    model, tokenizer = load_for_inference(str(folder), device="cpu")
    generate_token_ids(model, tokenizer, prompts[:1], max_new_tokens=4)  # warm-up
    started = time.perf_counter()
    answers = generate_token_ids(model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "tokens": sum(len(a) for a in answers)}


if __name__ == "__main__":
    # The core's command line makes descriptor 1 stderr for the rest of the process (its events keep a copy of the
    # real stdout): the result goes to a copy taken before, or a first run, which imports the model, printed it to stderr.
    result_out = os.fdopen(os.dup(1), "w")
    out, prompts_file, max_new, batch = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    folder, gguf = prepare(out)
    prompts = [json.loads(line)["messages"] for line in prompts_file.read_text().splitlines()]
    result = bench(folder, prompts, max_new, batch)
    result_out.write(json.dumps({**result, "gguf": str(gguf)}) + "\n")
    result_out.flush()
