"""make-tiny-model: a random-init Llama-architecture decoder with a tokenizer trained on the given text.

Tests and offline demos train it for real; llama.cpp supports the architecture, and the chat template
(ChatML) ends each turn with <|im_end|>, which is also the model's eos token.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from . import events
from .chat import CHATML_TEMPLATE, END_OF_TURN, PAD, SPECIAL_TOKENS
from .errors import SpecError

_DEFAULT_CORPUS = (
    "The quick brown fox jumps over the lazy dog. What is the capital of France? Paris. "
    "Answer with a number: 1 2 3 4 5 6 7 8 9 10. Hello, how are you? I am fine, thank you. "
    "<think> </think> <answer> </answer> yes no true false"
)


@dataclass
class Options:
    """Make a tiny random-init Llama model and its tokenizer, saved as an HF model folder."""

    output_dir: str = field(metadata={"help": "folder to write the model into (created)"})
    text_files: list[str] = field(default_factory=list, metadata={
        "help": "text or JSONL files to train the tokenizer on (JSONL: every string value is used); "
                "a small built-in corpus is always added"})
    vocab_size: int = field(default=400, metadata={"help": "tokenizer vocabulary size (≥ 300: 256 bytes + merges)"})
    hidden_size: int = field(default=64, metadata={"help": "model width"})
    num_layers: int = field(default=2, metadata={"help": "decoder layers"})
    num_heads: int = field(default=4, metadata={"help": "attention heads"})
    num_kv_heads: int = field(default=2, metadata={"help": "key/value heads (grouped-query attention)"})
    intermediate_size: int = field(default=128, metadata={"help": "MLP width"})
    max_position_embeddings: int = field(default=512, metadata={"help": "context length of the model"})
    initializer_range: float = field(default=0.1, metadata={
        "help": "std of the random weights; large enough that an adapter on a random model can move the logits"})
    seed: int = field(default=0, metadata={"help": "random seed for the weights"})


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


def build_tokenizer(text_files: list[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_corpus(text_files), trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=END_OF_TURN, pad_token=PAD,
                                   model_input_names=["input_ids", "attention_mask"],
                                   chat_template=CHATML_TEMPLATE, model_max_length=None)


def run(options: Options) -> None:
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    if options.vocab_size < 300:
        raise SpecError(f"vocab_size {options.vocab_size} is too small; use at least 300")
    tokenizer = build_tokenizer(options.text_files, options.vocab_size)
    tokenizer.model_max_length = options.max_position_embeddings
    eot = tokenizer.convert_tokens_to_ids(END_OF_TURN)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=options.hidden_size, num_hidden_layers=options.num_layers,
        num_attention_heads=options.num_heads, num_key_value_heads=options.num_kv_heads,
        intermediate_size=options.intermediate_size, max_position_embeddings=options.max_position_embeddings,
        bos_token_id=None, eos_token_id=eot, pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True,
        initializer_range=options.initializer_range,
    )
    torch.manual_seed(options.seed)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=eot, pad_token_id=tokenizer.pad_token_id)
    out = Path(options.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    events.emit(events.Artifact(kind="model", path=str(out)))
