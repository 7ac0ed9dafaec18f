"""Builds the Gemma 3 270M fixtures (needs the core's `gemma` extra): the imported HF folder (cached like
core/tests/test_gemma_import.py does, so both share one import), its f16 GGUF, and transformers' greedy token ids."""
import hashlib
import json
import os
import sys
from importlib import metadata
from pathlib import Path

from ftcore.models import import_model
from ftcore.cli import main

PROMPTS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Name three colors."}],
]


def cli(*args: str) -> None:
    if main(list(args)) != 0:
        raise SystemExit(f"ftcore {args[0]} failed")


def gemma_folder() -> Path:
    version = metadata.version(import_model.GEMMA_PACKAGE)
    importer = hashlib.sha256(Path(import_model.__file__).read_bytes()).hexdigest()[:12]
    cache = Path(os.environ.get("FTCORE_CACHE", Path.home() / ".cache" / "ftcore"))
    folder = cache / f"gemma3-270m-{version}-{importer}"
    if not (folder / "config.json").is_file():
        partial = cache / f"partial-{folder.name}"
        cli("import-model", "--source", "gemma3-270m", "--output_dir", str(partial))
        partial.rename(folder)
    return folder


def build(root: Path, max_new_tokens: int) -> None:
    folder = gemma_folder()
    prompts = root / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"messages": p}) + "\n" for p in PROMPTS))
    cli("gguf", "--model", str(folder), "--output_file", str(root / "gemma-f16" / "model.gguf"), "--quantization", "f16")
    cli("generate", "--model", str(folder), "--input_file", str(prompts), "--output_file", str(root / "hf.jsonl"),
        "--max_new_tokens", str(max_new_tokens), "--device", "cpu")


if __name__ == "__main__":
    build(Path(sys.argv[1]), int(sys.argv[2]))
