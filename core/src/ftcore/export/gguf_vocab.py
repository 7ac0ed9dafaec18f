"""The tokenizer half of a GGUF export: vocabulary, merges/scores, special ids and chat template as llama.cpp
reads them (the Ollama Modelfile beside the GGUF: modelfile.py)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..chat import QWEN2_REGEX
from ..errors import SpecError

# Byte-level BPE pre-tokenizer regexes → the llama.cpp `tokenizer.ggml.pre` name that splits text the same way.
_GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_PRE_BY_REGEX = {
    _GPT2_REGEX: "gpt-2",
    QWEN2_REGEX: "qwen2",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+":
        "llama-bpe",
}
_GENERATION_TAG = re.compile(r"\{%-?\s*(end)?generation\s*-?%\}")


def chat_template_for_gguf(tokenizer) -> str:
    """The tokenizer's chat template without transformers' `{% generation %}` markers, which llama.cpp's and
    Ollama's template engines do not know."""
    if not tokenizer.chat_template:
        raise SpecError("the model folder has no chat template; a GGUF without one cannot chat (train or import "
                        "the model with the core, which always saves one)")
    return _GENERATION_TAG.sub("", tokenizer.chat_template)


def write_tokenizer(writer, model_dir: Path, tokenizer) -> None:
    spec = json.loads((model_dir / "tokenizer.json").read_text())
    kind = spec["model"]["type"]
    special_ids = set(tokenizer.all_special_ids)
    template = chat_template_for_gguf(tokenizer)  # fails early when there is none
    if kind == "BPE" and not spec["model"].get("byte_fallback"):
        _write_byte_level_bpe(writer, spec, tokenizer, special_ids, model_dir)
    elif kind in ("BPE", "Unigram") and spec["model"].get("byte_fallback"):
        _write_sentencepiece(writer, spec, special_ids)
    else:
        raise SpecError(f"tokenizer type {kind} (byte_fallback={spec['model'].get('byte_fallback')}) cannot be "
                        "written as GGUF; supported: byte-level BPE (GPT-2/Llama 3/Qwen style) and SentencePiece "
                        "BPE or Unigram with byte fallback (Gemma/Llama 2 style)")
    eot = tokenizer.eos_token_id
    if eot is None:
        raise SpecError("the tokenizer has no eos (end-of-turn) token; set eos_token in tokenizer_config.json")
    writer.add_eos_token_id(eot)
    writer.add_eot_token_id(eot)
    for name, value in (("bos", tokenizer.bos_token_id), ("pad", tokenizer.pad_token_id),
                        ("unk", tokenizer.unk_token_id)):
        if value is not None:
            getattr(writer, f"add_{name}_token_id")(value)
    writer.add_add_bos_token(bool(getattr(tokenizer, "add_bos_token", False)) and tokenizer.bos_token_id is not None)
    writer.add_add_eos_token(False)
    writer.add_chat_template(template)


def _write_byte_level_bpe(writer, spec: dict, tokenizer, special_ids: set[int], model_dir: Path) -> None:
    import gguf

    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(_pre_tokenizer_name(spec.get("pre_tokenizer")))
    by_id = {i: t for t, i in tokenizer.get_vocab().items()}
    added = {t["id"]: t for t in spec.get("added_tokens", [])}
    tokens, types = [], []
    for i in range(len(by_id)):
        if i not in by_id:
            raise SpecError(f"tokenizer vocabulary has a hole at id {i}; cannot write a GGUF vocabulary")
        tokens.append(by_id[i])
        if i in added:
            types.append(gguf.TokenType.CONTROL if added[i]["special"] or i in special_ids
                         else gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    merges = gguf.SpecialVocab(model_dir, load_merges=True).merges
    if not merges:
        raise SpecError("byte-level BPE tokenizer without merges; tokenizer.json is incomplete")
    writer.add_token_merges(merges)


def _pre_tokenizer_name(pre: dict | None) -> str:
    if pre and pre.get("type") == "ByteLevel" and pre.get("use_regex", True):
        return "gpt-2"
    parts = (pre or {}).get("pretokenizers", [])
    if [p.get("type") for p in parts] == ["Digits", "ByteLevel"] and parts[0].get("individual_digits") \
            and parts[1].get("use_regex", True):
        return "smollm"  # SmolLM's: each digit apart, then GPT-2's split
    splits = [p for p in parts if p.get("type") == "Split"]
    if len(splits) == 1 and splits[0]["pattern"].get("Regex") in _PRE_BY_REGEX:
        return _PRE_BY_REGEX[splits[0]["pattern"]["Regex"]]
    raise SpecError(f"pre-tokenizer {json.dumps(pre)[:200]} has no llama.cpp equivalent known to this exporter; "
                    f"supported: {sorted(set(_PRE_BY_REGEX.values()) | {'smollm'})}")


def _write_sentencepiece(writer, spec: dict, special_ids: set[int]) -> None:
    """Pieces with scores, as llama.cpp's SentencePiece ("llama") tokenizer reads them: it merges the adjacent pair
    whose joined piece scores highest, so a BPE piece scores minus the rank of the first merge that makes it (what
    SentencePiece itself stores); a Unigram piece keeps its log-probability."""
    import gguf

    model = spec["model"]
    if model["type"] == "Unigram":
        pieces = [piece for piece, _ in model["vocab"]]
        scores = [float(score) for _, score in model["vocab"]]
    else:
        pieces = [piece for piece, _ in sorted(model["vocab"].items(), key=lambda item: item[1])]
        rank: dict[str, int] = {}
        for k, merge in enumerate(model["merges"]):
            rank.setdefault("".join(merge) if isinstance(merge, list) else merge.replace(" ", ""), k)
        scores = [-float(rank[p]) if p in rank else 0.0 for p in pieces]
    added = {t["id"]: t for t in spec.get("added_tokens", [])}
    types = []
    for i, piece in enumerate(pieces):
        if i == model.get("unk_id") or piece == model.get("unk_token"):
            types.append(gguf.TokenType.UNKNOWN)
        elif re.fullmatch(r"<0x[0-9A-Fa-f]{2}>", piece):
            types.append(gguf.TokenType.BYTE)
        elif i in special_ids or added.get(i, {}).get("special"):
            types.append(gguf.TokenType.CONTROL)
        elif i in added:
            types.append(gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
    if "<0x0A>" not in pieces:
        # llama.cpp finds the newline through its byte piece, and a vocabulary without one aborts the whole process
        # that loads it (an uncaught std::out_of_range in llama_vocab::byte_to_token), worker and stack alike.
        raise SpecError("the tokenizer is a BPE with byte fallback but has no byte pieces (<0x0A> and the like), so "
                        "llama.cpp cannot load it as SentencePiece; a byte-level BPE tokenizer must not set byte_fallback")
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_add_space_prefix(False)
    writer.add_token_list(pieces)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
