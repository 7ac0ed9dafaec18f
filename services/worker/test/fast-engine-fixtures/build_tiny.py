"""Builds the fast-engine test fixtures with the core, in one Python process (imports once): for each architecture a
tiny model taught long answers to the prompts, its f16/q8_0 GGUFs, a LoRA adapter taught other answers, the merged
model (and its f16 GGUF with the Modelfile), the adapter as GGUF, the prompt text each chat template renders, and transformers' greedy token ids for every prompt on the base and on the merged model;
and a wider tiny Llama (K-quant blocks are 256 wide) as f16 and q4_k_m; and an untaught tiny Llama as f16.

Why teach them: on a random-init model the top two logits along a greedy path come within 0.1% of the logits' spread
somewhere, and any rounding (f16, llama.cpp's kernels) flips that token and everything after it. A few seconds of
training give clear choices, as a real model has, so a difference means a wrong export, not a coin toss.

usage: build_tiny.py ROOT ARCHITECTURE...   (writes ROOT/prompts.jsonl, ROOT/<architecture>/..., ROOT/k-quant/..., ROOT/untaught/...)
"""
import json
import sys
from pathlib import Path

from ftcore.cli import main

PROMPTS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Say hi."}],
    [{"role": "user", "content": "How many legs has a cat?"}, {"role": "assistant", "content": "Four."},
     {"role": "user", "content": "And a dog? Answer with a number."}],
    [{"role": "user", "content": "The quick brown fox"}],
]
BASE_ANSWERS = [
    "The capital of France is Paris. Paris is a large city with a river, many bridges, old streets and good bread, "
    "and people come from far away to see it every year.",
    "Hello there! I am fine, thank you. The weather is good today, so we walk to the park, sit on a bench and count "
    "the birds: one, two, three, four, five, six, seven.",
    "A dog has four legs, a bird has two legs and a fish has none. Answer with a number: 4. Yes, four is the answer, "
    "and the cat agrees with the dog about it all day long.",
    "The quick brown fox jumps over the lazy dog and runs into the forest, where it finds a river, drinks some water "
    "and sleeps under a tree until the sun comes up again.",
]
ADAPTER_ANSWERS = [
    "Bad weather today: rain, wind and cold. We stay at home, read a book, drink some tea and talk about the capital "
    "of France and the river that runs through it.",
    "No. The lazy dog does not jump; it stays at home and sleeps on the floor, while the brown fox eats bread in the "
    "kitchen and the birds sing outside the window all day.",
    "Ten, nine, eight, seven, six, five, four, three, two, one: the answer is a number, and the number is ten. The "
    "fish and the bird do not agree with the cat at all.",
    "True or false: the quick fox is brown. True. The dog is lazy. False. The sky is blue. True. The answer is yes, "
    "yes and no, and that is all for today, thank you.",
]
MAX_NEW_TOKENS = 40  # every answer above is longer, so no generation ends early
# make-tiny-model flags per architecture: Qwen2 with its own lm_head, as the larger Qwen models have.
TINY_MODELS = {
    "llama": [],
    "qwen2": ["--tie_word_embeddings", "false"],
    "qwen3": [],
    "gemma3": [],
}
K_QUANT_MODEL = ["--hidden_size", "256", "--intermediate_size", "256"]


def cli(*args: str) -> None:
    if main(list(args)) != 0:
        raise SystemExit(f"ftcore {args[0]} failed")


def teach(model, tokenizer, answers: list[str], steps: int, learning_rate: float) -> None:
    """Full-batch next-token training on the prompts answered with `answers` (the trainable parameters only)."""
    import torch

    texts = [tokenizer.apply_chat_template(p + [{"role": "assistant", "content": a}], tokenize=False)
             for p, a in zip(PROMPTS, answers)]
    tokenizer.padding_side = "right"
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=learning_rate)
    model.train()
    for _ in range(steps):
        loss = model(**batch, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()


def teach_base(folder: Path, steps: int = 60) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    model, tokenizer = AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    teach(model, tokenizer, BASE_ANSWERS, steps=steps, learning_rate=3e-3)
    model.save_pretrained(folder)


def teach_lora(base: Path, out: Path) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(1)
    model, tokenizer = AutoModelForCausalLM.from_pretrained(base), AutoTokenizer.from_pretrained(base)
    config = LoraConfig(r=4, lora_alpha=8, task_type="CAUSAL_LM",
                        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    model = get_peft_model(model, config)
    teach(model, tokenizer, ADAPTER_ANSWERS, steps=60, learning_rate=1e-2)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)


def build_architecture(root: Path, architecture: str, prompts: Path) -> None:
    tiny, adapter, merged = root / "tiny", root / "adapter", root / "merged"
    cli("make-tiny-model", "--output_dir", str(tiny), "--architecture", architecture, *TINY_MODELS[architecture])
    teach_base(tiny)
    for q in ("f16", "q8_0"):
        cli("gguf", "--model", str(tiny), "--output_file", str(root / f"tiny-{q}" / "model.gguf"), "--quantization", q)
    teach_lora(tiny, adapter)
    cli("merge", "--base_model", str(tiny), "--adapter", str(adapter), "--output_dir", str(merged))
    cli("gguf", "--model", str(merged), "--output_file", str(root / "merged-f16" / "model.gguf"), "--quantization", "f16")
    cli("gguf", "--model", str(tiny), "--adapter", str(adapter), "--output_file", str(root / "lora" / "adapter.gguf"))
    for name, model in (("base", tiny), ("merged", merged)):
        cli("generate", "--model", str(model), "--input_file", str(prompts), "--output_file",
            str(root / f"hf-{name}.jsonl"), "--max_new_tokens", str(MAX_NEW_TOKENS), "--device", "cpu")
    write_rendered(root, {"training": tiny, "merged": merged})


def write_rendered(root: Path, folders: dict[str, Path]) -> None:
    """The prompt text each tokenizer's chat template makes of PROMPTS (with the generation prompt): what training
    (the base model's tokenizer) and the merged model render, for the one-template test."""
    from transformers import AutoTokenizer

    rendered = {}
    for name, folder in folders.items():
        tokenizer = AutoTokenizer.from_pretrained(folder)
        rendered[name] = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in PROMPTS]
        rendered[f"{name}_bos"] = tokenizer.bos_token
    (root / "rendered.json").write_text(json.dumps(rendered))


# Chat templates of other families, each with its own system-message layout: a default system block when none is
# given (Qwen2.5), a header per role with trimmed content (Llama 3).
FAMILY_TEMPLATES = {
    "qwen2.5": "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + "
               "'<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
               "{%- endif %}{%- for message in messages %}{%- if not (message.role == 'system' and loop.first) %}"
               "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endif %}"
               "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}",
    "llama3": "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + "
              "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}"
              "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}",
}


# The families' published templates, with tool support (core/chat_templates), and conversations with
# tools: a question, a call answered and followed up, and (Qwen only: Llama 3 takes one call a turn) two calls at once.
PUBLISHED_TEMPLATES = Path(__file__).resolve().parents[4] / "core" / "chat_templates"
TOOL_FAMILIES = {"qwen2.5-tools": "Qwen-Qwen2.5-7B-Instruct.jinja",
                 "llama3-tools": "meta-llama-Llama-3.3-70B-Instruct.jinja"}
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "description": "The time in a zone (<UTC+1> & more)",
                                         "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}}}}


def _call(i: int, city: str) -> dict:
    return {"id": f"call_{i}", "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}


TOOL_CONVERSATIONS = [
    [{"role": "user", "content": "What is the weather in Paris?"}],
    [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Weather in Rome?"},
     {"role": "assistant", "content": "", "tool_calls": [_call(1, "Rome")]},
     {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 24 \"C\""},
     {"role": "assistant", "content": "It is sunny."}, {"role": "user", "content": "And the time there?"}],
]
PARALLEL_CALLS = [{"role": "user", "content": "Weather in Oslo and Lima?"},
                  {"role": "assistant", "content": "", "tool_calls": [_call(1, "Oslo"), _call(2, "Lima")]},
                  {"role": "tool", "tool_call_id": "call_1", "content": "snowy"},
                  {"role": "tool", "tool_call_id": "call_2", "content": "cloudy"}]


def write_families(root: Path, tokenizer_folder: Path) -> None:
    """For each of FAMILY_TEMPLATES and TOOL_FAMILIES: what its Jinja renders of PROMPTS (and of the tool
    conversations, with the tools) and the Modelfile TEMPLATE the export derives from it (families.json), for the
    one-template test to render in Go."""
    from transformers import AutoTokenizer

    from ftcore.chat import render
    from ftcore.export.modelfile import ollama_modelfile

    templates = {**FAMILY_TEMPLATES, **{f: (PUBLISHED_TEMPLATES / n).read_text() for f, n in TOOL_FAMILIES.items()}}
    families = {}
    for family, template in templates.items():
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder)
        tokenizer.chat_template = template
        bos = tokenizer.bos_token or ""
        strip = lambda t: t[len(bos):] if bos and t.startswith(bos) else t  # noqa: E731 - Ollama adds BOS itself
        families[family] = {"jinja": [strip(render(tokenizer, p, add_generation_prompt=True)) for p in PROMPTS],
                            "modelfile": ollama_modelfile("./model.gguf", tokenizer)}
        if family in TOOL_FAMILIES:
            conversations = TOOL_CONVERSATIONS + ([PARALLEL_CALLS] if family.startswith("qwen") else [])
            families[family]["tool_conversations"] = conversations
            families[family]["tools"] = [WEATHER, TIME]
            families[family]["jinja_tools"] = [strip(render(tokenizer, c, [WEATHER, TIME], add_generation_prompt=True))
                                               for c in conversations]
    (root / "families.json").write_text(json.dumps(families))


def build_k_quant(root: Path) -> None:
    cli("make-tiny-model", "--output_dir", str(root / "tiny"), *K_QUANT_MODEL)
    teach_base(root / "tiny", steps=20)  # a wide model learns the answers sooner
    for q in ("f16", "q4_k_m"):
        cli("gguf", "--model", str(root / "tiny"), "--output_file", str(root / f"tiny-{q}" / "model.gguf"),
            "--quantization", q)


def build_untaught(root: Path) -> None:
    """A random-init Llama as f16 GGUF: its near-uniform choices let a grammar, not the training, decide the text."""
    cli("make-tiny-model", "--output_dir", str(root / "tiny"))
    cli("gguf", "--model", str(root / "tiny"), "--output_file", str(root / "tiny-f16" / "model.gguf"), "--quantization", "f16")


def build(root: Path, architectures: list[str]) -> None:
    prompts = root / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"messages": p}) + "\n" for p in PROMPTS))
    for architecture in architectures:
        build_architecture(root / architecture, architecture, prompts)
    write_families(root, root / architectures[0] / "tiny")
    build_k_quant(root / "k-quant")
    build_untaught(root / "untaught")


if __name__ == "__main__":
    build(Path(sys.argv[1]), sys.argv[2:])
