"""make-tiny-model: a random-init decoder of a real transformers architecture (Llama, Qwen2, Qwen3, Gemma 3) with a
tokenizer trained on the given text and the family's chat template, saved as an HF model folder in seconds.

Tests and offline demos train it for real and run it in llama.cpp. Llama and Qwen chat in ChatML, ending each turn
with <|im_end|>; Gemma 3 with <start_of_turn>/<end_of_turn> over a SentencePiece-style BPE with byte fallback. The
end-of-turn token is also the tokenizer's eos and the generation stop token. A published template (a Jinja file, such
as Qwen2.5's or Llama 3's with their tool sections) may replace ChatML; its <|…|> markers become special tokens.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..chat import END_OF_TURN, PAD
from ..errors import SpecError
from .tiny_parts import Architecture, ChatFormat, build_tokenizer, save_tiny_model

_GEMMA3_LAYERS = 6  # Gemma 3 alternates five sliding-window layers with one global layer

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


