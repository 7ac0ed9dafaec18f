"""gguf: an HF model folder → one .gguf file for llama.cpp (weights, tokenizer, chat template, stop tokens) plus an
Ollama Modelfile beside it; or a PEFT LoRA adapter → a GGUF LoRA adapter that llama.cpp applies over the base GGUF.

Written with the `gguf` package (GGUFWriter, its tensor name maps and quantizers), so no llama.cpp build is needed;
q4_k_m is quantized by llama.cpp's prebuilt library from npm when it is installed (gguf_quantize.py).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .. import events
from ..errors import SpecError

# HF architecture → llama.cpp architecture. The Llama family needs its q/k rows permuted (llama.cpp's "llama"
# rotates interleaved pairs, HF rotates halves); Gemma stores RMSNorm weights as (w - 1).
ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Gemma3ForCausalLM": "gemma3",
}
Quantization = Literal["f16", "bf16", "q8_0", "q4_0", "q4_k_m"]


@dataclass
class Options:
    """Convert an HF model folder to GGUF (with an Ollama Modelfile), or a LoRA adapter to a GGUF LoRA adapter."""

    model: str = field(metadata={"help": "HF model folder (merged or full-trained); with adapter, the base it was "
                                         "trained on"})
    output_file: str = field(metadata={"help": "the .gguf file to write (its folder is created); a Modelfile is "
                                               "written beside a model file"})
    quantization: Quantization = field(default="q8_0", metadata={
        "help": "tensor type of the 2-D weights: f16, bf16, q8_0, q4_0, q4_k_m (llama.cpp's mix of Q4_K and Q6_K, "
                "made by the prebuilt libllama of the npm package @node-llama-cpp/<platform>; without it, written "
                "as q4_0 and said so in a log event)"})
    adapter: str | None = field(default=None, metadata={
        "help": "PEFT LoRA adapter folder: write a GGUF LoRA adapter (f32) for model instead of the model, with an "
                "Ollama Modelfile beside it"})
    base_gguf: str | None = field(default=None, metadata={
        "help": "with adapter: the base model's .gguf that the adapter's Modelfile names in FROM; without it FROM is "
                "a placeholder to replace"})


def run(options: Options) -> None:
    events.stage("writing_gguf", f"writing the GGUF ({'LoRA adapter' if options.adapter else options.quantization})")
    config = read_config(Path(options.model))
    arch = _architecture(config)
    out = Path(options.output_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    if options.adapter:
        write_lora_adapter(Path(options.adapter), config, arch, out)
        write_adapter_modelfile(Path(options.model), out, options.base_gguf)
        events.emit(events.Artifact(kind="gguf", path=str(out)))
        return
    if options.quantization == "q4_k_m":
        write_q4_k_m(Path(options.model), config, arch, out)
    else:
        write_model(Path(options.model), config, arch, options.quantization, out)
    events.emit(events.Artifact(kind="gguf", path=str(out)))


def read_config(model_dir: Path) -> dict:
    """An HF model folder's config.json (gguf and onnx exports)."""
    if not (model_dir / "config.json").is_file():
        raise SpecError(f"model {model_dir} is not an HF model folder (no config.json)")
    return json.loads((model_dir / "config.json").read_text())


def _architecture(config: dict) -> str:
    names = config.get("architectures") or []
    for name in names:
        if name in ARCHITECTURES:
            return ARCHITECTURES[name]
    raise SpecError(f"architecture {names or config.get('model_type')} cannot be exported to GGUF; "
                    f"supported: {', '.join(ARCHITECTURES)}")


def write_q4_k_m(model_dir: Path, config: dict, arch: str, out: Path) -> None:
    """f16 first, then llama.cpp's Q4_K_M from it (its own tensor-type mix); q4_0 where the library is missing."""
    from .gguf_quantize import find_libllama, quantize_q4_k_m

    lib, why_not = find_libllama()
    if lib is None:
        events.emit(events.Log(level="warning", message=f"q4_k_m requested: written as q4_0, because {why_not} "
                               "(the gguf package cannot quantize Q4_K)"))
        write_model(model_dir, config, arch, "q4_0", out)
        return
    f16 = out.with_name(f".{out.name}.f16.partial")
    try:
        write_model(model_dir, config, arch, "f16", f16, modelfile_for=out)
        quantize_q4_k_m(lib, f16, out)
    finally:
        f16.unlink(missing_ok=True)


def write_model(model_dir: Path, config: dict, arch: str, quantization: str, out: Path,
                modelfile_for: Path | None = None) -> None:
    """The GGUF of the model, and the Modelfile beside it (naming `modelfile_for`, the final file, if not `out`)."""
    import gguf
    from transformers import AutoConfig, AutoTokenizer

    from .gguf_vocab import write_tokenizer
    from .modelfile import ollama_modelfile

    hf = AutoConfig.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    qtype = {"f16": gguf.GGMLQuantizationType.F16, "bf16": gguf.GGMLQuantizationType.BF16,
             "q8_0": gguf.GGMLQuantizationType.Q8_0, "q4_0": gguf.GGMLQuantizationType.Q4_0}[quantization]
    file_type = {"f16": gguf.LlamaFileType.MOSTLY_F16, "bf16": gguf.LlamaFileType.MOSTLY_BF16,
                 "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0, "q4_0": gguf.LlamaFileType.MOSTLY_Q4_0}[quantization]
    writer = gguf.GGUFWriter(str(out), arch)
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_name(config.get("_name_or_path") or model_dir.name)
    writer.add_file_type(file_type)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    _write_hparams(writer, arch, hf)
    write_tokenizer(writer, model_dir, tokenizer)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH[arch.upper()], hf.num_hidden_layers)
    for hf_name, array in _weights(model_dir):
        if hf_name == "lm_head.weight" and getattr(hf, "tie_word_embeddings", False):
            continue
        name = _gguf_name(names, hf_name)
        array = _to_llama_cpp_layout(arch, hf, hf_name, array)
        data, dtype = _encode(name, array, qtype)
        writer.add_tensor(name, data, raw_dtype=dtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    (out.parent / "Modelfile").write_text(ollama_modelfile(f"./{(modelfile_for or out).name}", tokenizer))


def write_adapter_modelfile(model_dir: Path, out: Path, base_gguf: str | None) -> None:
    """FROM the base GGUF (relative to the adapter's folder) or a placeholder, ADAPTER the file, the base's chat
    template and stop tokens."""
    import os

    from transformers import AutoTokenizer

    from .modelfile import ollama_modelfile

    if base_gguf:
        relative = os.path.relpath(Path(base_gguf).resolve(), out.parent.resolve())
        base = relative if relative.startswith("..") else f"./{relative}"
    else:
        base = "./BASE-MODEL.gguf"
    comment = (f"FROM must be the GGUF of the base model this LoRA was trained on ({model_dir.name}), e.g. the core's "
               "`gguf` export of it" + ("." if base_gguf else ": replace the placeholder ./BASE-MODEL.gguf."))
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    (out.parent / "Modelfile").write_text(ollama_modelfile(base, tokenizer, adapter=f"./{out.name}", comment=comment))


def _write_hparams(writer, arch: str, hf) -> None:
    head_dim = getattr(hf, "head_dim", None) or hf.hidden_size // hf.num_attention_heads
    writer.add_context_length(hf.max_position_embeddings)
    writer.add_embedding_length(hf.hidden_size)
    writer.add_block_count(hf.num_hidden_layers)
    writer.add_feed_forward_length(hf.intermediate_size)
    writer.add_head_count(hf.num_attention_heads)
    writer.add_head_count_kv(getattr(hf, "num_key_value_heads", None) or hf.num_attention_heads)
    writer.add_layer_norm_rms_eps(hf.rms_norm_eps)
    writer.add_rope_freq_base(_rope_theta(hf))
    writer.add_vocab_size(hf.vocab_size)
    if arch in ("gemma3", "qwen3"):
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    else:
        writer.add_rope_dimension_count(head_dim)
    if arch == "gemma3":
        _write_gemma3_attention(writer, hf)
    scaling = getattr(hf, "rope_scaling", None)
    if scaling:
        import gguf

        if scaling.get("rope_type", scaling.get("type")) != "linear":
            raise SpecError(f"rope_scaling {scaling} is not supported by the GGUF exporter (only linear)")
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(scaling["factor"])


def _write_gemma3_attention(writer, hf) -> None:
    """llama.cpp's gemma3 makes every sixth layer global and rotates sliding-window layers with base 10000 unless
    told otherwise; the logits may be soft-capped."""
    layer_types = getattr(hf, "layer_types", None)
    expected = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(hf.num_hidden_layers)]
    if layer_types is not None and list(layer_types) != expected:
        raise SpecError(f"Gemma 3 layer_types {layer_types} differ from the five-sliding-one-global pattern that "
                        "llama.cpp assumes for gemma3; this model cannot be exported to GGUF")
    if getattr(hf, "attn_logit_softcapping", None):
        raise SpecError("Gemma 3 with attn_logit_softcapping cannot be exported: llama.cpp's gemma3 does not cap "
                        "attention logits")
    writer.add_sliding_window(hf.sliding_window)
    local_base = float(getattr(hf, "rope_local_base_freq", 10000.0))
    if local_base != 10000.0:
        writer.add_float32(f"{writer.arch}.rope.freq_base_swa", local_base)
    if getattr(hf, "final_logit_softcapping", None):
        writer.add_final_logit_softcapping(hf.final_logit_softcapping)


def _rope_theta(hf) -> float:
    theta = getattr(hf, "rope_theta", None)
    if theta is None:
        theta = (getattr(hf, "rope_parameters", None) or {}).get("rope_theta", 10000.0)
    return float(theta)


def _weights(model_dir: Path):
    """(HF name, float32 numpy array) for every tensor in the folder's safetensors files."""
    from safetensors import safe_open

    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise SpecError(f"model {model_dir} has no .safetensors weights; save it with safe_serialization")
    for path in files:
        with safe_open(str(path), framework="pt") as fh:
            for key in fh.keys():
                yield key, fh.get_tensor(key).float().numpy()


def _gguf_name(names, hf_name: str) -> str:
    name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
    if name is None:
        raise SpecError(f"tensor {hf_name} has no llama.cpp name for this architecture; the model is not a plain "
                        "checkpoint of a supported architecture")
    return name


def _to_llama_cpp_layout(arch: str, hf, hf_name: str, array):
    if arch == "llama" and re.search(r"\.(q_proj|k_proj)\.weight$", hf_name):
        heads = hf.num_attention_heads if "q_proj" in hf_name else hf.num_key_value_heads
        return permute_rope_rows(array, heads)
    if arch == "gemma3" and hf_name.endswith("norm.weight"):
        return array + 1.0
    return array


def permute_rope_rows(array, heads: int):
    """HF's rotate-half q/k rows → llama.cpp's interleaved pairs (as convert_hf_to_gguf.py's LlamaModel.permute)."""
    return (array.reshape(heads, 2, array.shape[0] // heads // 2, *array.shape[1:])
            .swapaxes(1, 2).reshape(array.shape))


def _encode(name: str, array, qtype):
    """1-D tensors stay f32 (llama.cpp expects it); the embedding stays at least q8_0 (it is also the output layer
    when tied); rows that do not fill whole quant blocks fall back to f16."""
    import gguf
    import numpy as np

    Q = gguf.GGMLQuantizationType
    if array.ndim == 1:
        return array.astype(np.float32), None
    if qtype == Q.Q4_0 and name in ("token_embd.weight", "output.weight"):
        qtype = Q.Q8_0
    if qtype == Q.F16:
        return array.astype(np.float16), None
    block = gguf.GGML_QUANT_SIZES[qtype][0]
    if array.shape[-1] % block:
        return array.astype(np.float16), None
    return gguf.quants.quantize(array, qtype), qtype


def write_lora_adapter(adapter_dir: Path, config: dict, arch: str, out: Path) -> None:
    import gguf
    import numpy as np
    from safetensors import safe_open

    settings_path = adapter_dir / "adapter_config.json"
    if not settings_path.is_file():
        raise SpecError(f"adapter {adapter_dir} has no adapter_config.json; pass the adapter folder train wrote")
    settings = json.loads(settings_path.read_text())
    unsupported = [k for k in ("use_dora", "use_rslora", "modules_to_save", "rank_pattern", "alpha_pattern")
                   if settings.get(k)]
    if settings.get("peft_type") != "LORA" or unsupported:
        raise SpecError(f"only plain LoRA adapters convert to GGUF (found peft_type {settings.get('peft_type')}, "
                        f"options {unsupported}); merge the adapter and export the merged model instead")
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH[arch.upper()], config["num_hidden_layers"])
    pairs: dict[str, dict[str, np.ndarray]] = {}
    with safe_open(str(adapter_dir / "adapter_model.safetensors"), framework="pt") as fh:
        for key in fh.keys():
            found = re.fullmatch(r"base_model\.model\.(.+)\.lora_([AB])\.weight", key)
            if not found:
                raise SpecError(f"adapter tensor {key} is not a LoRA A/B matrix; cannot convert it")
            pairs.setdefault(found.group(1), {})[found.group(2)] = fh.get_tensor(key).float().numpy()
    writer = gguf.GGUFWriter(str(out), arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(settings["lora_alpha"]))
    for module, ab in sorted(pairs.items()):
        name = _gguf_name(names, module + ".weight")
        lora_b = ab["B"]
        if arch == "llama" and re.search(r"\.(q_proj|k_proj)$", module):
            heads = config["num_attention_heads"] if module.endswith("q_proj") else config["num_key_value_heads"]
            lora_b = permute_rope_rows(lora_b, heads)
        writer.add_tensor(name + ".lora_a", ab["A"].astype(np.float32))
        writer.add_tensor(name + ".lora_b", lora_b.astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
