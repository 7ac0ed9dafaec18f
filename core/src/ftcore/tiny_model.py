"""make-tiny-model: a random-init decoder of a real transformers architecture (Llama, Qwen2, Qwen3, Gemma 3) with a
tokenizer trained on the given text and the family's chat template, saved as an HF model folder in seconds.

Tests and offline demos train it for real and run it in llama.cpp. Llama and Qwen chat in ChatML, ending each turn
with <|im_end|>; Gemma 3 with <start_of_turn>/<end_of_turn> over a SentencePiece-style BPE with byte fallback. The
end-of-turn token is also the tokenizer's eos and the generation stop token. A published template (a Jinja file, such
as Qwen2.5's or Llama 3's with their tool sections) may replace ChatML; its <|…|> markers become special tokens.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from . import events
from .chat import CHATML_TEMPLATE, END_OF_TURN, GEMMA3_END_OF_TURN, GEMMA3_TEMPLATE, PAD, SPECIAL_TOKENS
from .errors import SpecError

_DEFAULT_CORPUS = (
    "The quick brown fox jumps over the lazy dog. What is the capital of France? Paris. "
    "Answer with a number: 1 2 3 4 5 6 7 8 9 10. Hello, how are you? I am fine, thank you. "
    "<think> </think> <answer> </answer> yes no true false"
)
_GEMMA3_SPECIAL_TOKENS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", GEMMA3_END_OF_TURN]
_GEMMA3_LAYERS = 6  # Gemma 3 alternates five sliding-window layers with one global layer
Architecture = Literal["llama", "qwen2", "qwen3", "gemma3", "gemma3-vision"]


@dataclass
class Options:
    """Make a tiny random-init model and its tokenizer, saved as an HF model folder."""

    output_dir: str = field(metadata={"help": "folder to write the model into (created)"})
    architecture: Architecture = field(default="llama", metadata={
        "help": "llama (LlamaForCausalLM, ChatML), qwen2 (Qwen2ForCausalLM: q/k/v biases, ChatML), qwen3 "
                "(Qwen3ForCausalLM: q/k norms, ChatML) or gemma3 (Gemma3ForCausalLM: sliding-window and global "
                "layers, Gemma turns, SentencePiece-style tokenizer) or gemma3-vision (Gemma3ForConditionalGeneration: "
                "a SigLIP vision tower and projector before the gemma3 decoder, with a Gemma3Processor; tiny_vision.py)"})
    text_files: list[str] = field(default_factory=list, metadata={
        "help": "text or JSONL files to train the tokenizer on (JSONL: every string value is used); "
                "a small built-in corpus is always added"})
    vocab_size: int = field(default=400, metadata={"help": "tokenizer vocabulary size (≥ 300: 256 bytes + merges)"})
    hidden_size: int = field(default=64, metadata={"help": "model width"})
    num_layers: int | None = field(default=None, metadata={
        "help": f"decoder layers (default 2; gemma3: {_GEMMA3_LAYERS}, five sliding-window layers and a global one)"})
    num_heads: int = field(default=4, metadata={"help": "attention heads"})
    num_kv_heads: int = field(default=2, metadata={"help": "key/value heads (grouped-query attention)"})
    intermediate_size: int = field(default=128, metadata={"help": "MLP width"})
    max_position_embeddings: int = field(default=512, metadata={"help": "context length of the model"})
    sliding_window: int = field(default=16, metadata={
        "help": "gemma3: tokens a sliding-window layer attends to (the real models: 512 or more); small, so that "
                "short generations already cross it"})
    tie_word_embeddings: bool = field(default=True, metadata={
        "help": "the output layer reuses the embedding (false: a separate lm_head, as larger Llama/Qwen have)"})
    initializer_range: float = field(default=0.1, metadata={
        "help": "std of the random weights; large enough that an adapter on a random model can move the logits"})
    seed: int = field(default=0, metadata={"help": "random seed for the weights"})
    chat_template_file: str | None = field(default=None, metadata={
        "help": "llama, qwen2, qwen3: a published chat template (Jinja file) instead of ChatML; each <|…|> marker "
                "it writes becomes one special token"})
    end_of_turn: str = field(default=END_OF_TURN, metadata={
        "help": "with chat_template_file: the token that ends an assistant turn (eos and generation stop), such as "
                "<|eot_id|> for Llama 3"})
    bos_token: str | None = field(default=None, metadata={
        "help": "with chat_template_file: the bos_token the template writes, such as <|begin_of_text|> for Llama 3"})
    added_tokens: list[str] = field(default_factory=list, metadata={
        "help": "further single tokens of the format that stay in decoded text (not special), such as Qwen2.5's "
                "<tool_call> and </tool_call>"})


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


def published_format(options: Options) -> ChatFormat:
    """ChatML, or the template of chat_template_file with its <|…|> markers as special tokens."""
    if options.chat_template_file is None:
        return ChatFormat(added=options.added_tokens)
    path = Path(options.chat_template_file)
    if not path.is_file():
        raise SpecError(f"chat_template_file {path} does not exist; pass a Jinja chat template file")
    template = path.read_text()
    markers = list(dict.fromkeys(re.findall(r"<\|[A-Za-z0-9_]+\|>", template)))
    bos = [options.bos_token] if options.bos_token else []
    special = list(dict.fromkeys([PAD, *markers, options.end_of_turn, *bos]))
    if options.end_of_turn not in template:
        raise SpecError(f"end_of_turn {options.end_of_turn} does not occur in {path}; name the token that ends its "
                        "turns")
    return ChatFormat(template, special, options.end_of_turn, options.bos_token, options.added_tokens)


def build_tokenizer(text_files: list[str], vocab_size: int, architecture: Architecture = "llama",
                    chat: ChatFormat | None = None):
    """Byte-level BPE with ChatML (or a published template) for Llama (GPT-2 split) and Qwen (Qwen's split);
    SentencePiece-style BPE with byte fallback and Gemma's turn markers for gemma3."""
    if architecture == "gemma3":
        return _gemma3_tokenizer(text_files, vocab_size)
    chat = chat or ChatFormat()
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from .gguf_vocab import QWEN2_REGEX

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


def _model_config(options: Options, tokenizer, layers: int):
    from transformers import Gemma3TextConfig, LlamaConfig, Qwen2Config, Qwen3Config

    common = dict(
        vocab_size=len(tokenizer), hidden_size=options.hidden_size, num_hidden_layers=layers,
        num_attention_heads=options.num_heads, num_key_value_heads=options.num_kv_heads,
        intermediate_size=options.intermediate_size, max_position_embeddings=options.max_position_embeddings,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=options.tie_word_embeddings, initializer_range=options.initializer_range,
    )
    head_dim = options.hidden_size // options.num_heads
    if options.architecture == "llama":
        return LlamaConfig(bos_token_id=tokenizer.bos_token_id, **common)
    if options.architecture == "qwen2":
        return Qwen2Config(bos_token_id=tokenizer.bos_token_id, **common)
    if options.architecture == "qwen3":
        return Qwen3Config(bos_token_id=tokenizer.bos_token_id, head_dim=head_dim, **common)
    # Gemma 3 below 27B scales queries by 1/sqrt(head_dim), which is what llama.cpp assumes for them.
    return Gemma3TextConfig(bos_token_id=tokenizer.bos_token_id, head_dim=head_dim, query_pre_attn_scalar=head_dim,
                            sliding_window=options.sliding_window, **common)


def _randomize_vectors(model, std: float) -> None:
    """Norm weights and biases start as constants (ones or zeros); spread them so that a norm or bias exported to
    the wrong tensor changes the output."""
    import torch

    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.ndim == 1:
                parameter.add_(torch.randn_like(parameter) * std)


def run(options: Options) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    if options.vocab_size < 300:
        raise SpecError(f"vocab_size {options.vocab_size} is too small; use at least 300")
    if options.hidden_size % options.num_heads or options.num_heads % options.num_kv_heads:
        raise SpecError(f"hidden_size {options.hidden_size}, num_heads {options.num_heads} and num_kv_heads "
                        f"{options.num_kv_heads} must divide: hidden_size by num_heads, num_heads by num_kv_heads")
    if options.architecture == "gemma3-vision":
        from .tiny_vision import run as make_tiny_vision_model

        return make_tiny_vision_model(options)
    layers = options.num_layers or (_GEMMA3_LAYERS if options.architecture == "gemma3" else 2)
    if options.chat_template_file and options.architecture not in ("llama", "qwen2", "qwen3"):
        raise SpecError(f"chat_template_file applies to llama, qwen2 and qwen3; {options.architecture} keeps its own")
    tokenizer = build_tokenizer(options.text_files, options.vocab_size, options.architecture,
                                published_format(options))
    tokenizer.model_max_length = options.max_position_embeddings
    config = _model_config(options, tokenizer, layers)
    torch.manual_seed(options.seed)
    model = AutoModelForCausalLM.from_config(config)
    if options.architecture != "llama":  # the Llama model predates this; its weights stay as tests know them
        _randomize_vectors(model, options.initializer_range)
    save_tiny_model(model, tokenizer, tokenizer, options.output_dir)


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
