"""What the text and the vision tiny models share (make-tiny-model): the tokenizer trained on the given text with the
family's chat format, and the saving of a model folder that stops generation at the end of turn."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .. import events
from ..chat import CHATML_TEMPLATE, END_OF_TURN, GEMMA3_END_OF_TURN, GEMMA3_TEMPLATE, PAD, QWEN2_REGEX, SPECIAL_TOKENS
from ..errors import SpecError


_DEFAULT_CORPUS = (
    "The quick brown fox jumps over the lazy dog. What is the capital of France? Paris. "
    "Answer with a number: 1 2 3 4 5 6 7 8 9 10. Hello, how are you? I am fine, thank you. "
    "<think> </think> <answer> </answer> yes no true false"
)
_GEMMA3_SPECIAL_TOKENS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", GEMMA3_END_OF_TURN]
Architecture = Literal["llama", "qwen2", "qwen3", "gemma3", "gemma3-vision"]


def _corpus(text_files: list[str]):
    yield _DEFAULT_CORPUS
    for path in text_files:
        p = Path(path)
        if not p.exists():
            raise SpecError(f"text file {path} does not exist; pass existing files in text_files")
        if p.suffix == ".jsonl":
            for line in p.read_text().splitlines():
                if line.strip():
                    yield from _strings(json.loads(line))
        else:
            yield p.read_text()


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


@dataclass
class ChatFormat:
    """The chat template a byte-level tokenizer carries and the tokens it needs."""

    template: str = CHATML_TEMPLATE
    special: list[str] = field(default_factory=lambda: list(SPECIAL_TOKENS))
    eos: str = END_OF_TURN
    bos: str | None = None
    added: list[str] = field(default_factory=list)


def build_tokenizer(text_files: list[str], vocab_size: int, architecture: Architecture = "llama",
                    chat: ChatFormat | None = None):
    """Byte-level BPE with ChatML (or a published template) for Llama (GPT-2 split) and Qwen (Qwen's split);
    SentencePiece-style BPE with byte fallback and Gemma's turn markers for gemma3."""
    if architecture == "gemma3":
        return _gemma3_tokenizer(text_files, vocab_size)
    chat = chat or ChatFormat()
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast


    tok = Tokenizer(models.BPE())
    if architecture == "llama":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=chat.special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_corpus(text_files), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=chat.eos, pad_token=PAD, bos_token=chat.bos,
                                        model_input_names=["input_ids", "attention_mask"],
                                        chat_template=chat.template, model_max_length=None)
    if chat.added:
        tokenizer.add_tokens(chat.added)
    return tokenizer


def _gemma3_tokenizer(text_files: list[str], vocab_size: int):
    """Gemma's layout: special pieces, the 256 <0xXX> byte pieces, then BPE pieces learnt within ▁-prefixed words;
    the same normalizer, pre-tokenizer and decoder as import_model.gemma3_tokenizer_from_gguf gives the real one."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import GemmaTokenizerFast

    learner = Tokenizer(models.BPE(unk_token="<unk>"))
    learner.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never")
    learner.train_from_iterator(_corpus(text_files), trainer=trainers.BpeTrainer(
        vocab_size=vocab_size - 256, special_tokens=_GEMMA3_SPECIAL_TOKENS, show_progress=False))
    learnt = json.loads(learner.to_str())["model"]
    pieces = _GEMMA3_SPECIAL_TOKENS + [f"<0x{b:02X}>" for b in range(256)]
    pieces += [p for p, _ in sorted(learnt["vocab"].items(), key=lambda item: item[1]) if p not in pieces]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in learnt["merges"]]
    backend = Tokenizer(models.BPE({p: i for i, p in enumerate(pieces)}, merges, unk_token="<unk>", fuse_unk=True,
                                   byte_fallback=True))
    backend.add_special_tokens([AddedToken(p, normalized=False, special=True) for p in _GEMMA3_SPECIAL_TOKENS])
    backend.normalizer = normalizers.Replace(" ", "▁")
    backend.pre_tokenizer = pre_tokenizers.Split(" ", "merged_with_previous")
    backend.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    return GemmaTokenizerFast(tokenizer_object=backend, bos_token="<bos>", eos_token=GEMMA3_END_OF_TURN,
                              unk_token="<unk>", pad_token="<pad>", add_bos_token=True, add_eos_token=False,
                              chat_template=GEMMA3_TEMPLATE, model_max_length=None)


def save_tiny_model(model, tokenizer, files, output_dir: str) -> None:
    """Stops generation at the tokenizer's end of turn, saves the model and `files` (tokenizer or processor)."""
    from transformers import GenerationConfig

    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id,
                                               bos_token_id=tokenizer.bos_token_id)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    files.save_pretrained(out)
    events.emit(events.Artifact(kind="model", path=str(out)))
