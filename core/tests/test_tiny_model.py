"""make-tiny-model: each architecture is the real transformers class with its family's tokenizer and chat turns."""
from __future__ import annotations

import pytest

CONVERSATION = [{"role": "user", "content": "What is the capital of France?\nSay ü."},
                {"role": "assistant", "content": "Paris."}]


@pytest.mark.parametrize("architecture,model_class,end_of_turn,opening", [
    ("llama", "LlamaForCausalLM", "<|im_end|>", "<|im_start|>user\n"),
    ("qwen2", "Qwen2ForCausalLM", "<|im_end|>", "<|im_start|>user\n"),
    ("qwen3", "Qwen3ForCausalLM", "<|im_end|>", "<|im_start|>user\n"),
    ("gemma3", "Gemma3ForCausalLM", "<end_of_turn>", "<bos><start_of_turn>user\n"),
])
def test_architecture_tokenizer_and_turns(tiny_model_of, architecture, model_class, end_of_turn, opening):
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    folder = tiny_model_of(architecture)
    model = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert type(model).__name__ == model_class
    assert sum(p.numel() for p in model.parameters()) < 500_000  # tiny: saved and loaded in moments
    assert tokenizer.eos_token == end_of_turn
    assert GenerationConfig.from_pretrained(folder).eos_token_id == tokenizer.eos_token_id
    text = tokenizer.apply_chat_template(CONVERSATION, tokenize=False)
    assert text.startswith(opening) and text.endswith(f"Paris.{end_of_turn}\n")
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert ids.count(tokenizer.eos_token_id) == 2  # the end of turn is one token, not its characters
    assert tokenizer.decode(ids) == text  # byte-level or byte fallback: "\n" and "ü" survive


def test_gemma3_alternates_sliding_window_and_global_layers(tiny_model_of):
    import json

    config = json.loads(open(f"{tiny_model_of('gemma3')}/config.json").read())
    assert config["layer_types"] == ["sliding_attention"] * 5 + ["full_attention"]
    assert config["sliding_window"] == 16 and config["query_pre_attn_scalar"] == config["head_dim"] == 16
