"""gguf: tiny models of every supported architecture and LoRA adapters become GGUF files whose metadata, tensors and
Modelfiles say what llama.cpp and Ollama need; q4_k_m is llama.cpp's own Q4_K_M.

Token-for-token parity with transformers is proven by running the files in llama.cpp: the fast engine's tests
(services/worker/test/fast-engine.test.ts) use these same commands.
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from helpers import captured_events

from ftcore.export import gguf as gguf_export
from ftcore.errors import SpecError
from ftcore.export.gguf_quantize import find_libllama


def _export(model: str, out, **kw) -> captured_events:
    with captured_events() as cap:
        gguf_export.run(gguf_export.Options(model=model, output_file=str(out), **kw))
    return cap


def _field(reader, key: str):
    f = reader.fields[key]
    if len(f.data) == 1 and f.types[0].name != "ARRAY":
        value = f.parts[f.data[0]]
        return bytes(value).decode() if f.types[0].name == "STRING" else value[0]
    return [bytes(f.parts[i]).decode() if f.types[-1].name == "STRING" else f.parts[i][0] for i in f.data]


def _hf_weights(folder: str) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(f"{folder}/model.safetensors")


@pytest.fixture(scope="module")
def tiny_f16(tiny_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("gguf") / "tiny-f16.gguf"
    _export(tiny_model, out, quantization="f16")
    return out


def test_f16_carries_tokenizer_template_stop_tokens_and_context(tiny_model, tiny_f16):
    from gguf import GGUFReader
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    r = GGUFReader(str(tiny_f16))
    assert _field(r, "general.architecture") == "llama"
    assert _field(r, "llama.context_length") == 512
    assert _field(r, "tokenizer.ggml.model") == "gpt2"
    assert _field(r, "tokenizer.ggml.pre") == "gpt-2"  # llama.cpp's name for the GPT-2 split regex ByteLevel uses
    assert _field(r, "tokenizer.ggml.tokens") == [tok.convert_ids_to_tokens(i) for i in range(len(tok))]
    end_of_turn = tok.convert_tokens_to_ids("<|im_end|>")
    assert _field(r, "tokenizer.ggml.eos_token_id") == end_of_turn
    assert _field(r, "tokenizer.ggml.eot_token_id") == end_of_turn
    assert not _field(r, "tokenizer.ggml.add_bos_token")
    template = _field(r, "tokenizer.chat_template")
    assert "<|im_start|>" in template and "{%- generation %}" not in template  # transformers-only marker removed
    assert _field(r, "tokenizer.ggml.token_type")[end_of_turn] == 3  # CONTROL: parsed whole from the template


def test_f16_tensors_are_the_hf_weights_in_llama_cpp_layout(tiny_model, tiny_f16):
    from gguf import GGUFReader

    hf = _hf_weights(tiny_model)
    tensors = {t.name: np.asarray(t.data) for t in GGUFReader(str(tiny_f16)).tensors}
    assert "output.weight" not in tensors  # tied embeddings: llama.cpp reuses token_embd
    np.testing.assert_allclose(tensors["token_embd.weight"], hf["model.embed_tokens.weight"], atol=1e-3)
    config = json.loads(open(f"{tiny_model}/config.json").read())
    q = hf["model.layers.0.self_attn.q_proj.weight"]
    np.testing.assert_allclose(tensors["blk.0.attn_q.weight"],
                               gguf_export.permute_rope_rows(q, config["num_attention_heads"]), atol=1e-3)
    np.testing.assert_array_equal(tensors["blk.1.ffn_norm.weight"],
                                  hf["model.layers.1.post_attention_layernorm.weight"])


def test_modelfile_beside_the_gguf(tiny_f16):
    modelfile = (tiny_f16.parent / "Modelfile").read_text()
    assert modelfile.startswith(f"FROM ./{tiny_f16.name}\n")
    assert 'PARAMETER stop "<|im_end|>"' in modelfile
    assert '{{ if eq .Role "user" }}<|im_start|>user\n{{ .Content }}<|im_end|>\n' in modelfile
    assert '{{ if eq .Role "system" }}<|im_start|>system\n{{ .Content }}<|im_end|>\n{{ end }}' in modelfile
    assert modelfile.rstrip().endswith('<|im_start|>assistant\n"""\nPARAMETER stop "<|im_end|>"')


# One tensor per architecture that only it has, and what the export adds to it (Gemma stores RMSNorm weights - 1).
_OWN_TENSOR = {
    "qwen2": ("model.layers.0.self_attn.q_proj.bias", "blk.0.attn_q.bias", 0.0),
    "qwen3": ("model.layers.0.self_attn.q_norm.weight", "blk.0.attn_q_norm.weight", 0.0),
    "gemma3": ("model.layers.0.post_feedforward_layernorm.weight", "blk.0.post_ffw_norm.weight", 1.0),
}


@pytest.mark.slow
@pytest.mark.parametrize("architecture", sorted(_OWN_TENSOR))
def test_every_tensor_of_each_architecture_has_its_llama_cpp_place(tiny_model_of, tmp_path, architecture):
    from gguf import GGUFReader

    folder = tiny_model_of(architecture)
    _export(folder, tmp_path / "m.gguf", quantization="f16")
    r = GGUFReader(str(tmp_path / "m.gguf"))
    assert _field(r, "general.architecture") == architecture
    hf = _hf_weights(folder)
    tensors = {t.name: np.asarray(t.data) for t in r.tensors}
    assert len(tensors) == len(hf)  # tied embeddings: no lm_head in either
    hf_name, name, shift = _OWN_TENSOR[architecture]
    np.testing.assert_array_equal(tensors[name], hf[hf_name] + np.float32(shift))
    # Qwen and Gemma rotate halves in llama.cpp too: q rows keep the HF order.
    np.testing.assert_allclose(tensors["blk.0.attn_q.weight"], hf["model.layers.0.self_attn.q_proj.weight"], atol=1e-3)


@pytest.mark.slow
def test_qwen_tokenizer_splits_like_qwen(tiny_model_of, tmp_path):
    from gguf import GGUFReader

    _export(tiny_model_of("qwen2"), tmp_path / "m.gguf", quantization="f16")
    r = GGUFReader(str(tmp_path / "m.gguf"))
    assert (_field(r, "tokenizer.ggml.model"), _field(r, "tokenizer.ggml.pre")) == ("gpt2", "qwen2")


@pytest.mark.slow
def test_gemma3_sliding_window_sentencepiece_vocabulary_and_turns(tiny_model_of, tmp_path):
    from gguf import GGUFReader
    from transformers import AutoTokenizer

    folder = tiny_model_of("gemma3")
    tok = AutoTokenizer.from_pretrained(folder)
    _export(folder, tmp_path / "m.gguf", quantization="f16")
    r = GGUFReader(str(tmp_path / "m.gguf"))
    assert _field(r, "gemma3.attention.sliding_window") == 16
    assert _field(r, "gemma3.attention.key_length") == 16
    assert _field(r, "tokenizer.ggml.model") == "llama"
    assert _field(r, "tokenizer.ggml.add_bos_token") and _field(r, "tokenizer.ggml.bos_token_id") == tok.bos_token_id
    end_of_turn = tok.convert_tokens_to_ids("<end_of_turn>")
    assert _field(r, "tokenizer.ggml.eot_token_id") == _field(r, "tokenizer.ggml.eos_token_id") == end_of_turn
    types = _field(r, "tokenizer.ggml.token_type")
    assert (types[end_of_turn], types[tok.convert_tokens_to_ids("<0x0A>")]) == (3, 6)  # CONTROL, BYTE
    modelfile = (tmp_path / "Modelfile").read_text()
    # Gemma has no system turn: a system message is folded into the first user turn, as its Jinja template does
    assert ('{{ if eq .Role "user" }}{{ if $first }}{{ if $system }}<start_of_turn>user\n{{ $system }}\n\n{{ else }}'
            '<start_of_turn>user\n{{ end }}{{ else }}<start_of_turn>user\n{{ end }}{{ $first = false }}{{ .Content }}'
            '<end_of_turn>\n') in modelfile
    assert "<bos>" not in modelfile  # Ollama adds BOS itself
    assert modelfile.endswith('<start_of_turn>model\n"""\nPARAMETER stop "<end_of_turn>"\n')


def test_gemma3_with_another_layer_pattern_is_refused(tiny_model_of, tmp_path):
    folder = tmp_path / "gemma"
    shutil.copytree(tiny_model_of("gemma3"), folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "layer_types": ["full_attention"] * 6}))
    with pytest.raises(SpecError, match="five-sliding-one-global pattern"):
        _export(str(folder), tmp_path / "x.gguf")


def _dequantized(tensor) -> np.ndarray:
    from gguf.quants import dequantize

    return dequantize(tensor.data, tensor.tensor_type)


@pytest.mark.slow
@pytest.mark.parametrize("quantization,qtype,tolerance", [("q8_0", "Q8_0", 0.02), ("q4_0", "Q4_0", 0.1)])
def test_quantized_types_and_values(tiny_model, tmp_path, quantization, qtype, tolerance):
    from gguf import GGUFReader

    _export(tiny_model, tmp_path / "m.gguf", quantization=quantization)
    tensors = {t.name: t for t in GGUFReader(str(tmp_path / "m.gguf")).tensors}
    down = tensors["blk.0.ffn_down.weight"]
    assert down.tensor_type.name == qtype
    assert tensors["blk.0.attn_norm.weight"].tensor_type.name == "F32"
    hf = _hf_weights(tiny_model)["model.layers.0.mlp.down_proj.weight"]
    assert np.abs(_dequantized(down).reshape(hf.shape) - hf).max() < tolerance * np.abs(hf).max()


@pytest.fixture(scope="module")
def wide_tiny_model(tmp_path_factory) -> str:
    """Rows 256 wide, the size of a K-quant block (narrower rows fall back to other types)."""
    from ftcore.models.tiny_model import Options, run

    folder = tmp_path_factory.mktemp("wide") / "model"
    with captured_events():
        run(Options(output_dir=str(folder), hidden_size=256, intermediate_size=256, vocab_size=300))
    return str(folder)


@pytest.mark.slow
@pytest.mark.skipif(find_libllama()[0] is None, reason=f"q4_k_m needs llama.cpp's library: {find_libllama()[1]}")
def test_q4_k_m_is_llama_cpps_mix_of_q4_k_and_q6_k(wide_tiny_model, tmp_path):
    from gguf import GGUFReader

    cap = _export(wide_tiny_model, tmp_path / "m.gguf", quantization="q4_k_m")
    assert not cap.said("log")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Modelfile", "m.gguf"]  # the f16 step is gone
    assert (tmp_path / "Modelfile").read_text().startswith("FROM ./m.gguf\n")
    r = GGUFReader(str(tmp_path / "m.gguf"))
    assert _field(r, "general.file_type") == 15  # LLAMA_FTYPE_MOSTLY_Q4_K_M
    tensors = {t.name: t for t in r.tensors}
    types = {name: t.tensor_type.name for name, t in tensors.items() if len(t.shape) == 2}
    # Q6_K: the (tied) output layer, and attn_v / ffn_down in the layers that llama.cpp gives more bits.
    assert {n for n, q in types.items() if q == "Q6_K"} == {"token_embd.weight", "blk.1.attn_v.weight",
                                                             "blk.1.ffn_down.weight"}
    assert {q for q in types.values()} == {"Q4_K", "Q6_K"}
    hf = _hf_weights(wide_tiny_model)["model.layers.0.mlp.down_proj.weight"]
    down = _dequantized(tensors["blk.0.ffn_down.weight"]).reshape(hf.shape)
    assert np.abs(down - hf).max() < 0.1 * np.abs(hf).max()


@pytest.mark.slow
def test_q4_k_m_without_llama_cpps_library_is_q4_0_and_says_so(tiny_model, tmp_path, monkeypatch):
    from gguf import GGUFReader

    monkeypatch.setenv("FTCORE_LIBLLAMA", str(tmp_path / "missing" / "libllama.so"))
    cap = _export(tiny_model, tmp_path / "m.gguf", quantization="q4_k_m")
    assert "written as q4_0, because no prebuilt libllama found" in cap.said("log")[0].message
    tensors = {t.name: t for t in GGUFReader(str(tmp_path / "m.gguf")).tensors}
    assert tensors["blk.0.ffn_down.weight"].tensor_type.name == "Q4_0"


def test_unsupported_architecture_lists_the_supported_ones(tiny_model, tmp_path):
    folder = tmp_path / "gpt2"
    shutil.copytree(tiny_model, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "architectures": ["GPT2LMHeadModel"]}))
    with pytest.raises(SpecError, match="supported: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3"):
        _export(str(folder), tmp_path / "x.gguf")


def test_byte_fallback_without_byte_pieces_is_refused_not_a_gguf_that_aborts_llama_cpp(tiny_model, tmp_path):
    """What transformers' GGUF import made of SmolLM2's byte-level vocabulary: llama.cpp loads it as SentencePiece,
    finds no <0x0A> piece and aborts the process that loads it."""
    folder = tmp_path / "mixed"
    shutil.copytree(tiny_model, folder)
    spec = json.loads((folder / "tokenizer.json").read_text())
    spec["model"]["byte_fallback"] = True
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    with pytest.raises(SpecError, match="no byte pieces"):
        _export(str(folder), tmp_path / "x.gguf")


@pytest.mark.slow
def test_lora_adapter_gguf(tiny_model, tmp_path):
    import torch
    from gguf import GGUFReader
    from peft import LoraConfig, get_peft_model
    from safetensors.numpy import load_file
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    config = LoraConfig(r=4, lora_alpha=8, init_lora_weights=False, target_modules=["q_proj", "v_proj"])
    get_peft_model(model, config).save_pretrained(tmp_path / "adapter")
    _export(tiny_model, tmp_path / "adapter.gguf", adapter=str(tmp_path / "adapter"))
    r = GGUFReader(str(tmp_path / "adapter.gguf"))
    assert _field(r, "general.type") == "adapter"
    assert _field(r, "adapter.type") == "lora"
    assert _field(r, "adapter.lora.alpha") == 8.0
    tensors = {t.name: np.asarray(t.data) for t in r.tensors}
    assert len(tensors) == 2 * 2 * 2  # 2 layers × (q, v) × (a, b)
    peft = load_file(str(tmp_path / "adapter" / "adapter_model.safetensors"))
    prefix = "base_model.model.model.layers.0.self_attn"
    np.testing.assert_array_equal(tensors["blk.0.attn_v.weight.lora_a"], peft[f"{prefix}.v_proj.lora_A.weight"])
    np.testing.assert_array_equal(tensors["blk.0.attn_q.weight.lora_b"],
                                  gguf_export.permute_rope_rows(peft[f"{prefix}.q_proj.lora_B.weight"], 4))
    modelfile = (tmp_path / "Modelfile").read_text().splitlines()
    assert modelfile[0].startswith("# FROM must be the GGUF of the base model") and "./BASE-MODEL.gguf" in modelfile[0]
    assert modelfile[1:3] == ["FROM ./BASE-MODEL.gguf", "ADAPTER ./adapter.gguf"]
    assert modelfile[3].startswith('TEMPLATE """{{- range .Messages }}') and "<|im_start|>" in modelfile[3]
    assert modelfile[-1] == 'PARAMETER stop "<|im_end|>"'


@pytest.mark.slow
def test_lora_adapter_modelfile_names_the_base_gguf_relative_to_it(tiny_model, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"])).save_pretrained(tmp_path / "adapter")
    with captured_events():
        gguf_export.run(gguf_export.Options(model=tiny_model, output_file=str(tmp_path / "lora" / "a.gguf"),
                                            adapter=str(tmp_path / "adapter"),
                                            base_gguf=str(tmp_path / "base" / "model.gguf")))
    lines = (tmp_path / "lora" / "Modelfile").read_text().splitlines()
    assert lines[1:3] == ["FROM ../base/model.gguf", "ADAPTER ./a.gguf"]
