"""onnx: an HF model folder → the layout transformers.js and ONNX Runtime load (#43), with the reference the export is
verified against.

    <output_dir>/config.json, generation_config.json (eos: the model's end-of-turn ids), tokenizer files, chat template
    <output_dir>/onnx/model.onnx          fp32 with the KV-cache inputs and outputs (Optimum's exporter, optimum-onnx);
                                          over 2 GB its weights go to model.onnx_data beside it
    <output_dir>/onnx/model_fp16.onnx     fp16 weights, activations, KV cache and logits (exported from the model in fp16)
    <output_dir>/onnx/model_q4.onnx       4-bit weights of every MatMul (ONNX Runtime's MatMulNBits quantizer), fp32 else
    <output_dir>/onnx/model_q4f16.onnx    the fp16 model with 4-bit MatMul weights

With `reference_file`, the candidate prompts of `prompts_file` are rendered through the model's chat template and
generated greedily by transformers (fp32, `max_new_tokens` each, end-of-turn not stopping it, in order until enough
qualify); the first `prompts` whose continuation has at least `min_distinct` different tokens (a check that a repeated
token would pass says little), else the most varied, go to that file with their ids, and the worker compares the ONNX
models' greedy tokens in onnxruntime-node with them.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .. import events
from ..errors import SpecError
from .gguf import read_config

# What Optimum's text-generation-with-past export is tested on here (tests/test_onnx_export.py).
ARCHITECTURES = ("LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Gemma3ForCausalLM")
Variant = Literal["fp16", "q4", "q4f16"]
# MatMulNBits' block: the 32 weights that share one scale (transformers.js's q4 files use 32 as well), with a zero
# point (asymmetric): on SmolLM2-135M the greedy tokens agree with transformers' for 12.5% of 4 prompts × 32 before the
# first divergence, against 7% symmetric (a 135M model loses much at 4 bits; the export reports it, per variant).
Q4_BLOCK = 32
# fp16 is exported from the model in fp16 (Optimum traces it on the CPU), not converted from the fp32 graph: ONNX
# Runtime's float16 converter (onnxruntime.transformers.float16, 1.23) gives a graph its CPU optimizer cannot load
# ("Attempting to get index by a name which does not exist: InsertedPrecisionFreeCast_…" from SimplifiedLayerNormFusion),
# and with the RMSNorm kept in fp32 to avoid that, SmolLM2-135M's logits come out all 0. The traced fp16 model gives
# transformers' fp32 greedy tokens on SmolLM2 (4 prompts × 32, all equal).
# Gemma 3 traced in fp16 gives a graph ONNX Runtime refuses to run ("Unexpected input data type. Actual: (tensor(float)),
# expected: (tensor(float16))" inside the graph, optimum-onnx 0.1.0, onnxruntime 1.23), so it has no fp16 variants.
NO_FP16 = {"Gemma3ForCausalLM": "Gemma 3 traced in fp16 mixes fp32 and fp16 inside its graph, which ONNX Runtime refuses"}


@dataclass
class Options:
    """Export an HF causal LM folder to ONNX (fp32 and the variants asked) in transformers.js's layout."""

    model: str = field(metadata={"help": "HF model folder (a merged or fully trained text model)"})
    output_dir: str = field(metadata={"help": "folder to write (created; onnx/ inside it holds the models)"})
    variants: list[Variant] = field(default_factory=lambda: ["q4", "fp16", "q4f16"], metadata={
        "help": "variants beside the fp32 model.onnx: q4, fp16, q4f16"})
    prompts_file: str | None = field(default=None, metadata={
        "help": "JSON list of conversations ({\"messages\": [...]}) for the reference generations"})
    reference_file: str | None = field(default=None, metadata={
        "help": "JSON file to write: per prompt, its ids through the chat template and transformers' greedy tokens"})
    max_new_tokens: int = field(default=32, metadata={"help": "tokens per reference generation"})
    prompts: int = field(default=4, metadata={"help": "how many of the candidate prompts the reference keeps"})
    min_distinct: int = field(default=8, metadata={
        "help": "a kept prompt's continuation has at least this many different tokens (where enough candidates do)"})


def run(options: Options) -> None:
    model_dir = Path(options.model)
    architecture = _architecture(read_config(model_dir))
    out = Path(options.output_dir)
    (out / "onnx").mkdir(parents=True, exist_ok=True)
    events.stage("exporting_onnx", "exporting to ONNX (fp32, with the KV cache)")
    _export_fp32(model_dir, out)
    _write_generation_config(model_dir, out)
    _chat_template_in_tokenizer_config(out)
    fp32 = out / "onnx" / "model.onnx"
    for variant in options.variants:
        if variant in ("fp16", "q4f16") and architecture in NO_FP16:
            events.emit(events.Log(level="warning", message=f"the {variant} variant is not written: {NO_FP16[architecture]}"))
            continue
        events.stage("exporting_onnx", f"writing the {variant} variant")
        if variant == "q4":
            _quantize_q4(fp32, out / "onnx" / "model_q4.onnx")
        elif variant == "fp16":
            _export_fp16(model_dir, out)
        elif variant == "q4f16":
            fp16 = out / "onnx" / "model_fp16.onnx"
            if not fp16.is_file():
                _export_fp16(model_dir, out)
            _quantize_q4(fp16, out / "onnx" / "model_q4f16.onnx")
            if "fp16" not in options.variants:
                fp16.unlink()
    if options.reference_file:
        if not options.prompts_file:
            raise SpecError("reference_file needs prompts_file: the conversations to generate from")
        events.stage("exporting_onnx", "generating the reference with transformers")
        conversations = json.loads(Path(options.prompts_file).read_text())
        # The first `prompts` varied ones, in the candidates' order: the candidates after them are not generated
        # (each is seconds of CPU); fewer than that, and the least repetitive of the rest fill in.
        varied, rest = [], []
        for generated in reference_generations(model_dir, conversations, options.max_new_tokens):
            (varied if generated["distinct"] >= options.min_distinct else rest).append(generated)
            if len(varied) == options.prompts:
                break
        kept = [*varied, *sorted(rest, key=lambda g: -g["distinct"])][:options.prompts]
        Path(options.reference_file).write_text(json.dumps({"architecture": architecture, "prompts": kept}))
    events.emit(events.Artifact(kind="onnx", path=str(out)))


def _architecture(config: dict) -> str:
    """The supported architecture the model folder names; a vision or other model is refused."""
    names = config.get("architectures") or []
    if "vision_config" in config or any("ConditionalGeneration" in n or "Vision" in n for n in names):
        raise SpecError("a vision model cannot be exported to ONNX here (only its text generation would be); export it "
                        "as merged or GGUF")
    supported = [n for n in names if n in ARCHITECTURES]
    if not supported:
        raise SpecError(f"architecture {names or config.get('model_type')} cannot be exported to ONNX; supported: "
                        f"{', '.join(ARCHITECTURES)}")
    return supported[0]


def _export_fp32(model_dir: Path, out: Path) -> None:
    """model.onnx, with config, tokenizer files and chat template beside onnx/."""
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        _optimum_export(model_dir, Path(tmp), "fp32")
        for item in Path(tmp).iterdir():
            target = out / "onnx" / item.name if item.name.startswith("model.onnx") else out / item.name
            if target.exists():
                target.unlink()
            shutil.move(str(item), target)


def _export_fp16(model_dir: Path, out: Path) -> None:
    """onnx/model_fp16.onnx (and its _data over 2 GB), traced from the model in fp16."""
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        _optimum_export(model_dir, Path(tmp), "fp16")
        source, target = Path(tmp) / "model.onnx", out / "onnx" / "model_fp16.onnx"
        if (Path(tmp) / "model.onnx_data").exists():  # the graph names its data file: saved again under the new name
            import onnx

            _save(onnx.load(str(source)), target)
        else:
            shutil.move(str(source), target)


def _optimum_export(model_dir: Path, tmp: Path, dtype: str) -> None:
    from optimum.exporters.onnx import main_export

    main_export(str(model_dir), output=str(tmp), task="text-generation-with-past", device="cpu", dtype=dtype,
                library_name="transformers", do_validation=False)


def _write_generation_config(model_dir: Path, out: Path) -> None:
    """generation_config.json with the model's end-of-turn ids as eos (what transformers.js stops on)."""
    from transformers import AutoTokenizer, GenerationConfig

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    try:
        generation = GenerationConfig.from_pretrained(model_dir)
    except OSError:
        generation = GenerationConfig()
    configured = generation.eos_token_id
    configured = [configured] if isinstance(configured, int) else list(configured or [])
    ids = list(dict.fromkeys([*configured, *([tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else [])]))
    generation.eos_token_id = ids[0] if len(ids) == 1 else ids
    if generation.pad_token_id is None and tokenizer.pad_token_id is not None:
        generation.pad_token_id = tokenizer.pad_token_id
    generation.save_pretrained(out)


def _chat_template_in_tokenizer_config(out: Path) -> None:
    """The chat template inside tokenizer_config.json as well: transformers writes it to chat_template.jinja, which
    transformers.js (4.3) does not read ("tokenizer.chat_template is not set")."""
    template, config_file = out / "chat_template.jinja", out / "tokenizer_config.json"
    if not template.is_file() or not config_file.is_file():
        return
    config = json.loads(config_file.read_text())
    config["chat_template"] = template.read_text()
    config_file.write_text(json.dumps(config, indent=2, ensure_ascii=False))


def _quantize_q4(source: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(onnx.load(str(source)), block_size=Q4_BLOCK, is_symmetric=False)
    quantizer.process()
    _save(quantizer.model.model, target)


def _save(model, target: Path) -> None:
    """One file, or weights in <name>_data beside it when they pass protobuf's 2 GB."""
    import onnx

    large = model.ByteSize() > 2_000_000_000
    onnx.save_model(model, str(target), save_as_external_data=large, all_tensors_to_one_file=True,
                    location=f"{target.name}_data" if large else None)


def reference_generations(model_dir: Path, conversations: list[dict], max_new_tokens: int) -> Iterator[dict]:
    """Per conversation, as it is asked for: its prompt ids through the chat template (with the generation prompt) and
    transformers' greedy continuation of exactly `max_new_tokens` (fp32 on the CPU, the end-of-turn token not
    stopping it)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    # Plain greedy: no end-of-turn stop, and no min_new_tokens (it masks the end-of-turn logit, which ONNX would not).
    model.generation_config.eos_token_id = None
    listed = [c.get("messages") if isinstance(c, dict) else None for c in conversations]
    if not all(isinstance(messages, list) for messages in listed):
        raise SpecError('prompts_file must be a JSON list of {"messages": [...]}')
    for messages in listed:
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        with torch.no_grad():
            generated = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                       do_sample=False, max_new_tokens=max_new_tokens,
                                       pad_token_id=tokenizer.pad_token_id or 0)
        tokens = generated[0, len(ids):].tolist()
        yield {"messages": messages, "prompt_ids": ids, "tokens": tokens, "distinct": len(set(tokens))}
